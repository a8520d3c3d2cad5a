"""The claims checklist: every claim of the three papers has a verdict on the ledger or a stated reason."""

from repro.crosspaper.checklist import checklist, match
from repro.crosspaper.ledger import PAPERS
from repro.crosspaper.statements import statements


def test_every_checklist_claim_has_a_ledger_verdict_or_a_reason(monkeypatch, committed_ledger):
    monkeypatch.delenv("REPRO_RESULTS_DIR")  # the committed results
    table = checklist()
    ledger = statements(committed_ledger)
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


def test_paper3_verdicts_rest_on_three_independent_runs_a_side(monkeypatch):
    """One testability rule for Paper 3 (runs that share a stage 1 are one run): on the committed store, every Paper 3
    comparison with a verdict has at least 3 independent runs on each trained side, and a fixed side is a
    training-free model; the budget-rule page's AutoRegEmbed runs are counted by the stage-1 weights they start from."""
    import re

    from repro.autoregembed.experiments import converged
    from repro.autoregembed.experiments.search import base_config
    from repro.crosspaper.ledger_paper3 import paper3_rows
    from repro.verdicts.rule import MIN_RUNS, is_tested

    monkeypatch.delenv("REPRO_RESULTS_DIR", raising=False)  # the committed results
    monkeypatch.setenv("REPRO_TRAINING", "refuse")
    rows = paper3_rows("standard")
    tested = rows[rows["verdict"].map(is_tested)]
    for _, row in tested.iterrows():  # "p = ..., 3 vs 4 runs" or "p = ..., 3 runs vs one fixed model"
        fixed = re.search(r"(\d+) runs vs one fixed model", row["statistic"])
        if fixed:
            assert int(fixed.group(1)) >= MIN_RUNS and re.search(r"vs (PromptEOL|last token)\b", row["claim"]), \
                row.to_dict()  # a fixed side is a training-free method of the untrained backbone
            continue
        pairs = re.search(r"(\d+) paired runs", row["statistic"])  # pairs of runs from one stage 1 (a chain)
        sides = pairs or re.search(r"(\d+) vs (\d+) runs", row["statistic"])
        assert sides, row.to_dict()  # a trained method is tested with its runs as units, never over tasks alone
        assert min(map(int, sides.groups())) >= MIN_RUNS, row.to_dict()
    frame, _ = converged.final_scores(base_config("smollm2-135m"))
    digests = converged.stage1_digests(base_config("smollm2-135m"))
    autoreg = frame[frame.model == converged.AUTOREG]
    for seed, unit in autoreg.groupby("seed")["unit"].first().items():
        assert unit == f"stage 1 {digests[seed]}"  # seeds that share a stage 1 share a unit: one run
    # the independent chains: one stage 1 per seed, distinct weights (no two runs of a side share a stage 1), and
    # each chain's AutoRegEmbed starts from its own seed's stage 1
    from repro.autoregembed.experiments import independent

    chains, _ = independent.final_scores()
    for model in (converged.COMPRESSION, converged.AUTOREG):
        units = chains[chains.model == model].groupby("seed")["unit"].first()
        assert len(units) >= MIN_RUNS and units.is_unique, units.to_dict()
    compression = chains[chains.model == converged.COMPRESSION].groupby("seed")["unit"].first()
    for seed, unit in compression.items():  # the weights scored as compression only are those stage 2 started from
        assert unit == f"stage 1 {independent.stored_chain(seed)['start_digest']}", seed


def test_figure3_on_the_chains_supersedes_the_shared_stage1_rows_statement_by_statement(monkeypatch):
    """On the committed store with the chains' Figure 3 stood in (one statement tested on them): the data-efficiency
    page's rows of that statement are history (not current), the chains' rows of it are current, and the page's
    other statements stay current."""
    from repro.autoregembed.claims import ALIGNMENT, data_efficiency_claims
    from repro.autoregembed.experiments import chain_efficiency
    from repro.crosspaper.ledger_paper3 import paper3_rows
    from repro.crosspaper.statements import statement_of

    monkeypatch.delenv("REPRO_RESULTS_DIR", raising=False)  # the committed results
    monkeypatch.setenv("REPRO_COMPUTE", "refuse")
    seen = {}

    def tested(base, sizes, epochs, methods, references=None, **kwargs):  # the page's curve, shifted: "the chains'"
        from repro.autoregembed.experiments.data_efficiency import data_efficiency_scores

        curve = data_efficiency_scores(base, sizes, [0, 1], epochs, methods, kwargs["suite"], kwargs["tasks"])
        claims = data_efficiency_claims(curve.assign(**{"STS average": curve["STS average"] + 0.5}),
                                        references=references)
        seen["claims"] = claims[claims["statement"] == ALIGNMENT]
        return seen["claims"]

    monkeypatch.setattr(chain_efficiency, "tested", tested)
    rows = paper3_rows("standard")
    efficiency = rows[rows["page"] == "p3_data_efficiency"].assign(statement=lambda f: f["claim"].map(statement_of))
    alignment = efficiency[efficiency["statement"] == statement_of(ALIGNMENT)]
    assert len(seen["claims"]) and alignment["current"].astype(bool).sum() == len(seen["claims"])
    assert (~alignment["current"].astype(bool)).sum() == len(seen["claims"])  # the page's own rows: history
    assert "independent chains" in " ".join(alignment.loc[alignment["current"].astype(bool), "scale"])
    others = efficiency[efficiency["statement"] != statement_of(ALIGNMENT)]
    assert len(others) and others["current"].astype(bool).all()
