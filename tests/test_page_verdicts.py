"""One verdict per comparison, book-wide: every page that shows a verdict shows the claims ledger's, never a
second one decided over the page or at the raw p."""

import json
from pathlib import Path

import pandas as pd

from repro.crosspaper.page_verdicts import LEDGER_P, NOT_ON_LEDGER, on_ledger
from repro.verdicts.rule import CONTRADICTED, INCONCLUSIVE, SUPPORTED

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def _claims(difference=3.0, verdict=SUPPORTED):
    return pd.DataFrame({"statement": ["a beats b"], "comparison": ["a vs b"], "category": ["STS"],
                         "difference": [difference], "p": [0.01], "units": ["3 vs 3 runs"],
                         "verdict": [verdict]})


def test_a_page_row_takes_the_ledgers_verdict_and_an_unknown_one_says_so():
    ledger = pd.DataFrame({"page": ["pg"], "claim": ["a beats b [STS, a vs b]"], "difference": [3.0],
                           "verdict": [INCONCLUSIVE], "p (BH)": [0.2]})
    out = on_ledger(_claims(), 3, "pg", ledger=ledger)
    assert out["verdict"].tolist() == [INCONCLUSIVE] and out[LEDGER_P].tolist() == [0.2]
    # another difference (a rerun with other parameters) or another page: not the ledger's comparison
    for claims, page in ((_claims(difference=5.0, verdict=CONTRADICTED), "pg"), (_claims(verdict=CONTRADICTED), "other")):
        out = on_ledger(claims, 3, page, ledger=ledger)
        assert out["verdict"].tolist() == [CONTRADICTED] and out["note"].tolist() == [NOT_ON_LEDGER]


def test_no_page_decides_its_own_verdicts_over_the_page():
    """The page-level Benjamini-Hochberg (with_adjusted_p) is the ledger's alone."""
    for path in NOTEBOOKS.glob("*.ipynb"):
        code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
        assert "with_adjusted_p(" not in code, path.name


def _page_claims():
    """The verdict tables of the pages that test statements with training runs as units, built as the pages build
    them from the committed store (the book's parameters)."""
    from repro.autoregembed.claims import data_efficiency_claims
    from repro.autoregembed.experiments import independent
    from repro.autoregembed.experiments.configs import page_configs
    from repro.autoregembed.experiments.data_efficiency import data_efficiency_references, data_efficiency_scores
    from repro.pages.parameters import page_parameters
    from repro.pooling_attention.claims import ROBUSTNESS_CLAIMS, TABLE_CLAIMS, present_claims
    from repro.pooling_attention.converged import converged_scores
    from repro.verdicts.seeds import seeded_claims

    c = page_parameters("p1_converged", "standard")
    for b in c["backbones"]:
        models = [m for m in c.get("backbone_models", {}).get(b, c["models"]) if m in c["models"]]
        frame, _ = converged_scores(b, models, c.get("backbone_seeds", {}).get(b, c["seeds"]), c["suite"],
                                   c.get("backbone_tasks", {}).get(b))
        statements = ROBUSTNESS_CLAIMS if b in c["table5_backbones"] else TABLE_CLAIMS
        claims = present_claims(statements, set(frame.model) if len(frame) else set())
        if claims:
            yield 1, "p1_converged", seeded_claims(frame, claims)
    p = page_parameters("p3_converged", "standard")
    scores, _ = independent.final_scores(p["seeds"], p["backbone"], p["suite"])  # the chains: the current rows
    claims = [x for x in independent.CLAIMS if {x[1], x[2]} <= set(scores.model)] if len(scores) else []
    if claims:
        yield 3, "p3_converged", seeded_claims(scores, claims)
    d = page_parameters("p3_data_efficiency", "standard")
    _, base = page_configs(**d)
    curve = data_efficiency_scores(base, d["sizes"], d["seeds"], d["epochs"], d["methods"], d["suite"], d["tasks"])
    flat = data_efficiency_references(base, d["references"], d["suite"], d["tasks"])
    yield 3, "p3_data_efficiency", data_efficiency_claims(curve, references=flat)


def test_every_pages_verdict_for_a_comparison_is_the_ledgers(monkeypatch, committed_ledger):
    """Each page's verdict table, as the page shows it (:func:`on_ledger`), has every row on the ledger, and its
    verdict is the ledger row's, looked up here by page, claim and difference (the committed store)."""
    monkeypatch.delenv("REPRO_RESULTS_DIR", raising=False)  # the committed results
    monkeypatch.setenv("REPRO_TRAINING", "refuse")
    ledger = committed_ledger
    seen = 0
    for paper, page, claims in _page_claims():
        shown = on_ledger(claims, paper, page, ledger=ledger)
        assert shown["on the ledger"].all(), (page, shown.loc[~shown["on the ledger"], "statement"].tolist())
        rows = ledger[ledger["page"] == page]
        for (_, row), verdict in zip(claims.iterrows(), shown["verdict"]):
            where = [str(x) for x in (row["category"], row["comparison"]) if str(x) != "all"]
            match = rows[(rows["claim"] == f"{row['statement']} [{', '.join(where)}]")
                         & (pd.to_numeric(rows["difference"]).round(2) == round(float(row["difference"]), 2))]
            assert len(match) == 1 and match["verdict"].iloc[0] == verdict, (page, row["statement"])
            seen += 1
    assert seen >= 20
