"""Would AutoRegEmbed's official template change a ledger verdict: the ledger again with the data-efficiency page's
runs under the official template, statement by statement beside the published ledger."""

import pandas as pd
import pytest

from repro.crosspaper import template_sensitivity as ts
from repro.crosspaper.ledger import claims_ledger
from repro.crosspaper.ledger_schema import COLUMNS
from repro.crosspaper.statements import statements

PAPER = "AutoRegEmbed (Deng et al., arXiv 2502.11401)"


def _ledger(verdicts: dict[str, list[tuple[str, str]]]) -> pd.DataFrame:
    """A ledger frame of statement -> [(page, verdict), ...] comparisons, in the columns statements() reads."""
    rows = [{"paper": PAPER, "claim": f"{statement} [comparison {i}]", "tier": "headline", "difference": 1.0,
             "paper (quoted)": "", "test": "Welch t over runs", "expected": "better", "p": 0.01, "p (BH)": 0.01,
             "margin side": "", "verdict": verdict, "page": page, "current": True, "90% CI": "",
             "category": "", "tasks": float("nan"), "p (MixedLM)": float("nan")}
            for statement, comparisons in verdicts.items() for i, (page, verdict) in enumerate(comparisons)]
    return pd.DataFrame(rows).reindex(columns=[*COLUMNS, "p (BH)"])


def test_the_table_sets_the_overridden_ledgers_verdicts_beside_the_published_ones(monkeypatch):
    published = _ledger({"A beats B at every size": [(ts.PAGE, "supported"), (ts.PAGE, "supported")],
                         "A beats C at every size": [(ts.PAGE, "inconclusive")],
                         "alignment helps": [(ts.PAGE, "inconclusive"), ("p3_converged", "inconclusive")],
                         "layers differ": [("p1_layers", "supported")]})
    official = _ledger({"A beats B at every size": [(ts.PAGE, "supported"), (ts.PAGE, "contradicted")],
                        "A beats C at every size": [(ts.PAGE, "inconclusive")],
                        "alignment helps": [(ts.PAGE, "inconclusive"), ("p3_converged", "inconclusive")],
                        "layers differ": [("p1_layers", "supported")]})
    monkeypatch.setattr(ts, "pending", lambda profile="standard": [])
    monkeypatch.setattr(ts, "claims_ledger", lambda profile="standard", pages=None: official)
    table = ts.verdicts_under(ledger=published)
    assert list(table["statement"]) == ["A beats B at every size", "A beats C at every size", "alignment helps"]
    assert list(table["book template"]) == ["supported", "inconclusive", "inconclusive"]
    assert list(table["official template"]) == ["contradicted", "inconclusive", "inconclusive"]
    assert list(table["changed"]) == [True, False, False]
    assert list(table["other pages (book template)"]) == ["", "", "p3_converged"]
    assert ts.sentence(table) == ("with the data-efficiency runs made under the official template, 1 of the 3 "
                                  "statements they test changes verdict: \"A beats B at every size\" supported → "
                                  "contradicted (the headline count would read 1 supported and 1 contradicted of 4 "
                                  "tested)")
    same = table.assign(changed=False)
    assert ts.sentence(same).endswith("none of the 3 statements they test changes verdict")


def test_while_the_official_runs_are_missing_the_table_is_empty_and_says_how_to_run_them(monkeypatch):
    monkeypatch.setattr(ts, "pending", lambda profile="standard": ["AutoRegEmbed: 3 of 10 runs scored"])
    assert ts.verdicts_under().empty
    assert ts.sentence(ts.verdicts_under()) == (
        "the data-efficiency runs under the official template are not all stored yet (AutoRegEmbed: 3 of 10 runs "
        f"scored; `{ts.RERUN}` runs them)")


def test_the_ledger_takes_other_parameters_only_for_the_pages_the_registry_lets_it():
    with pytest.raises(ValueError, match="only for p2_main_table, p2_filter_types, p3_tables"):
        claims_ledger("standard", pages={"p1_train": {"steps": 3}})
    with pytest.raises(TypeError, match="pages must be a dict"):
        claims_ledger("standard", pages=["p3_data_efficiency"])
    with pytest.raises(ValueError, match="has no parameter"):
        claims_ledger("standard", pages={"p3_data_efficiency": {"templates": "official"}})


def test_on_the_committed_store_the_official_runs_answer_for_the_data_efficiency_statements(monkeypatch,
                                                                                         committed_ledger):
    monkeypatch.delenv("REPRO_RESULTS_DIR")  # the committed results
    monkeypatch.setenv("REPRO_TRAINING", "refuse")  # read only: a missing result fails, never trains
    ledger = committed_ledger
    table = ts.verdicts_under(ledger=ledger)
    if ts.pending():
        assert table.empty and ts.RERUN in ts.sentence(table)
        return
    published = statements(ledger)
    tested = published[published["pages"].str.contains(ts.PAGE)]
    assert list(table["statement"]) == list(tested["statement"])  # every statement the page tests, no other
    assert list(table["book template"]) == list(tested["verdict"])
    assert table["official template"].ne("").all()


def test_the_data_efficiency_swap_reads_autoregembeds_points_of_another_configuration(monkeypatch):
    """With its own configuration the swap gives the page's curve back exactly; another template's points are
    either all stored or named as missing (never a partial curve)."""
    from repro.autoregembed.experiments import data_efficiency as de
    from repro.autoregembed.experiments.configs import page_configs
    from repro.pages.parameters import page_parameters

    monkeypatch.delenv("REPRO_RESULTS_DIR")  # the committed results
    monkeypatch.setenv("REPRO_TRAINING", "refuse")
    d = page_parameters(ts.PAGE, "standard")
    _, base = page_configs(**d)
    args = (d["sizes"], d["seeds"], d["epochs"])
    curve = de.data_efficiency_scores(base, *args, d["methods"], d["suite"], d["tasks"])
    flat = de.data_efficiency_references(base, d["references"], d["suite"], d["tasks"])
    assert de.missing_autoreg(base, *args, d["references"], d["suite"], d["tasks"]) == []
    same, same_flat = de.with_autoreg_of(base, curve, flat, *args, d["suite"], d["tasks"])
    keys = ["method", "examples", "seed"]
    pd.testing.assert_frame_equal(same.sort_values(keys).reset_index(drop=True)[[*keys, "STS average"]],
                                  curve.sort_values(keys).reset_index(drop=True)[[*keys, "STS average"]], atol=1e-9)
    pd.testing.assert_series_equal(same_flat, flat, atol=1e-9)
    _, official = page_configs(**(d | {"template": "official"}))
    todo = de.missing_autoreg(official, *args, d["references"], d["suite"], d["tasks"])
    if todo:
        with pytest.raises(LookupError, match="not stored"):
            de.with_autoreg_of(official, curve, flat, *args, d["suite"], d["tasks"])
    else:
        swapped, swapped_flat = de.with_autoreg_of(official, curve, flat, *args, d["suite"], d["tasks"])
        assert len(swapped) == len(curve) and swapped_flat["PromptEOL"] == flat["PromptEOL"]
        assert swapped_flat["compression only"] != flat["compression only"]
        baselines = swapped[swapped.method != "AutoRegEmbed"].sort_values(keys).reset_index(drop=True)
        pd.testing.assert_frame_equal(baselines, curve[curve.method != "AutoRegEmbed"].sort_values(keys)
                                      .reset_index(drop=True))


def test_paper_2s_check_reruns_both_sweep_pages_promptEOL_under_the_official_scripts_template(monkeypatch):
    p2 = "EmbedFilter (Wu et al., arXiv 2606.07502)"
    published = _ledger({"edge/2 improves": [("p2_main_table", "supported")],
                         "edge is the best": [("p2_filter_types", "inconclusive")],
                         "frequent tokens sit in the edges": [("p2_vocab_probe", "supported")]}).assign(paper=p2)
    official = _ledger({"edge/2 improves": [("p2_main_table", "supported")],
                        "edge is the best": [("p2_filter_types", "contradicted")],
                        "frequent tokens sit in the edges": [("p2_vocab_probe", "supported")]}).assign(paper=p2)
    asked = []
    monkeypatch.setattr(ts, "p2_pending", lambda profile="standard": [])
    monkeypatch.setattr(ts, "claims_ledger", lambda profile="standard", pages=None: asked.append(pages) or official)
    table = ts.verdicts_under(ledger=published, check=ts.P2)
    # both sweep pages, PromptEOL under the scripts' template and Echo as it is, no earlier scope re-judged
    assert asked == [{page: {"prompts": ["prompteol-summarize", "echo"], "earlier_tasks": []}
                      for page in ("p2_main_table", "p2_filter_types")}]
    assert list(table["statement"]) == ["edge/2 improves", "edge is the best"]  # the lens page is not rerun
    assert list(table["official scripts' template"]) == ["supported", "contradicted"]
    assert ts.sentence(table, check=ts.P2).startswith("with the sweep pages' PromptEOL runs made under the official "
                                                      "template, 1 of the 2 statements they test changes verdict")
    monkeypatch.setattr(ts, "p2_pending", lambda profile="standard": ["gemma3-270m: 3 of 19 tasks"])
    assert ts.verdicts_under(check=ts.P2).empty
    assert "gemma3-270m: 3 of 19 tasks; `scripts/p2_sweeps.sh" in ts.sentence(ts.verdicts_under(check=ts.P2),
                                                                             check=ts.P2)
