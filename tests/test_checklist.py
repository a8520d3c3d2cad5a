"""The claims checklist: every claim of the three papers has a verdict on the ledger or a stated reason."""

from repro.crosspaper.checklist import checklist, match
from repro.crosspaper.ledger import PAPERS, claims_ledger
from repro.crosspaper.statements import statements


def test_every_checklist_claim_has_a_ledger_verdict_or_a_reason(monkeypatch):
    monkeypatch.delenv("REPRO_RESULTS_DIR")  # the committed results
    table = checklist()
    ledger = statements(claims_ledger("standard"))
    matched = match(table, ledger, PAPERS)
    testable = matched[matched["reason"].isna()]
    assert (testable["ledger statements"] == 1).all(), testable[testable["ledger statements"] != 1]
    assert (testable["tier"] == testable["ledger tier"]).all()
    assert (testable["verdict"] != "").all()
    untestable = matched[matched["reason"].notna()]
    assert (untestable["ledger statements"] == 0).all() and untestable["reason"].str.len().gt(20).all()
    # and the ledger has no statement the checklist lacks
    for number in (1, 2, 3):
        listed = table[table["paper"] == number]["statement"]
        for statement in ledger[ledger["paper"] == PAPERS[number]]["statement"]:
            assert any(statement.startswith(s) for s in listed), statement
