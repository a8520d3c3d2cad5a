"""The claims ledger's reproducibility summaries: every number comes from page parameters or the paper profile."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from repro.crosspaper.summaries import scope_and_scale, summary_markdown
from repro.pages import paper_profile
from repro.pages.parameters import page_parameters
from repro.pooling_attention.trained import converged_config


def test_scales_come_from_parameters_and_the_paper_profile(monkeypatch):
    one = scope_and_scale(1)["scale"]
    rule = converged_config("smollm2-135m")
    assert f"at most {rule.steps} steps x {rule.batch_size} examples" in one
    assert f"{len(paper_profile.P1_TASKS)} MTEB tasks" in one and "Mistral-7B-v0.1 (7.2B)" in one
    assert "1,000 steps x 2,048 examples" in one and "19 tasks (gemma3-270m: 17)" in one  # 8 a device x 256 steps
    assert "quoted from the official code, yixuantt/PoolingAndAttn@" in one
    two = scope_and_scale(2)["scale"]
    assert "CQADupstack" not in two and "56 MTEB datasets" in two  # its 12 subforums count once, as in MTEB
    three = scope_and_scale(3)["scale"]
    assert "11 tasks at 'compact' caps" in three  # the Tables 1-2 page's STS tasks and the retrieval pair
    assert "stage 2 1,563 steps x 128" in three
    assert ("(the rest are computing)" in two) == bool(page_parameters("p2_main_table", "standard")["skip_runs"])
    assert "no run is stored both ways yet" in scope_and_scale(2)["hard"]  # this test's own, empty store
    assert "no converged run of smollm2-135m is stored yet" in scope_and_scale(1)["hard"]
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(Path(__file__).resolve().parents[1] / "results"))
    hard = scope_and_scale(2)["hard"]  # the tokenization's effect is computed from the committed sweeps
    assert re.search(r"\(\d+( to \d+)? runs per design on smollm2-135m; the SD over them of a run's mean score: "
                     r"\d+\.\d for model 1, ", scope_and_scale(1)["hard"])
    assert re.search(r"changed a run's mean raw score by [-+]\d+\.\d\d to [-+]\d+\.\d\d points \(\d+ runs", hard)
    # the smoke profile's pages give the smoke scale
    assert "'smoke' caps" in scope_and_scale(3, "smoke")["scale"]


def test_summary_counts_and_bad_paper():
    from repro.crosspaper.statements import summary_counts

    counts = pd.Series({"supported": 2, "one run per method, no verdict": 3, "untestable at n=3 tasks": 5,
                        "missing results": 1, "contradicted": 4, "inconclusive": 1})
    assert summary_counts(counts) == {"supported": 2, "contradicted": 4, "tested": 7, "untestable": 9, "measured": 0}
    # a qualified verdict counts as its base verdict; a measurement is counted apart, never as a test
    counts = pd.Series({"supported, worse by 7.2 (Clustering on 1 task)": 1, "supported": 1,
                        "contradicted (Retrieval on 3 tasks)": 1, "measured: holds (one measurement per point)": 2})
    assert summary_counts(counts) == {"supported": 2, "contradicted": 1, "tested": 3, "untestable": 0, "measured": 2}
    text = summary_markdown(3, "AutoRegEmbed", {"supported": 4, "contradicted": 1, "tested": 9},
                            {"supported": 1, "contradicted": 0, "tested": 2, "untestable": 3})
    assert text.startswith("**AutoRegEmbed.**") and "*Headline statements:* 4 of 9 tested are supported" in text
    assert "*Ablation statements:* 1 of 2 tested is supported, 0 contradicted; 3 more have no verdict" in text
    with pytest.raises(ValueError, match="unknown paper 4"):
        scope_and_scale(4)


def test_ledger_page_types_no_summary_numbers():
    """The summaries are generated: the ledger notebook's summaries section types no digit."""
    cells = json.loads(Path("notebooks/claims_ledger.ipynb").read_text())["cells"]
    section = [i for i, c in enumerate(cells) if "".join(c["source"]).startswith("## Reproducibility summaries")]
    assert len(section) == 1
    prose = "".join(cells[section[0]]["source"])
    assert not re.search(r"\d", prose) and "summary_markdown" in "".join(cells[section[0] + 1]["source"])


def test_the_intros_answer_marks_each_headline_statement_from_the_ledgers_verdicts():
    import pandas as pd

    from repro.crosspaper.statements import answer_table, mark

    assert [mark(v) for v in ("supported", "contradicted", "inconclusive", "significant but below the margin",
                              "one run per method, no verdict", "untestable (one training run per method)",
                              "missing results")] == ["✓", "✗", "~", "~", "–", "–", "–"]
    table = pd.DataFrame({"paper": ["P", "P", "P"], "tier": ["headline", "ablation", "headline"],
                          "statement": ["a", "b", "c"], "ours": ["+1.00", "-2.00", ""],
                          "paper (quoted)": ["Q: +4.50 (X (arXiv 1), quoted via two summaries)", "3",
                                             "not quoted in the book"],
                          "verdict": ["supported", "contradicted", "inconclusive"], "pages": ["p1", "p2", "p3"]})
    answer = answer_table(table, caveats={"a": "p3_summary"})
    # headline only; the mark under a "verdict" header, † where a named choice changes the verdict
    assert answer["statement"].tolist() == ["a", "c"] and answer["verdict"].tolist() == ["✓†", "~"]
    assert answer["caveat"].tolist() == ["p3_summary", ""] and answer["in words"].tolist() == ["supported", "inconclusive"]
    assert answer["paper (quoted)"].tolist() == ["Q: +4.50", "-"]


def test_the_intro_tallies_each_papers_statements_by_mark_and_the_measured_apart():
    from repro.crosspaper.statements import tally

    table = pd.DataFrame({"paper": ["P"] * 5 + ["R"], "tier": ["headline"] * 4 + ["ablation", "headline"],
                          "verdict": ["supported", "contradicted", "inconclusive", "measured: holds (one measurement)",
                                      "supported", "one run per method, no verdict"]})
    assert tally(table) == {"P": "✓ 1 · ✗ 1 · ~ 1 · – 0 (and 1 measured)", "R": "✓ 0 · ✗ 0 · ~ 0 · – 1"}


def test_what_did_not_reproduce_counts_contradicted_and_undecided_apart():
    from repro.crosspaper.statements import outcome_sentence

    verdicts = pd.Series(["supported", "contradicted", "inconclusive", "significant but below the margin",
                          "one run per method, no verdict", "missing results", "supported"])
    assert outcome_sentence(verdicts, "P statements") == (
        "Of the 5 tested P statements, 2 are supported, 1 contradicted and 2 decided neither way (inconclusive at our "
        "runs, or significant but below the margin); the 3 not supported are listed here.")


def test_a_statement_shows_every_comparisons_quote_with_its_label_not_only_the_first():
    from repro.crosspaper.ledger_paper2 import _quoted_gain
    from repro.crosspaper.statements import answer_table, statements

    prompteol, echo = _quoted_gain("prompteol", "edge/2"), _quoted_gain("echo", "edge/2")
    assert prompteol.startswith("PromptEOL: ") and echo.startswith("Echo: ")
    ledger = pd.DataFrame({"paper": "P", "claim": ["gain [STS, a]", "gain [STS, b]", "gain [STS, c]"], "tier": "headline",
                           "difference": [1.0, 2.0, 3.0], "paper (quoted)": [prompteol, echo, "not quoted in the book"],
                           "test": "Wilcoxon", "expected": "better", "p": 0.01, "p (BH)": 0.01, "margin side": "",
                           "verdict": "supported", "page": "p2_main_table", "current": True, "90% CI": "",
                           "detectable (80% power)": float("nan"), "units a side for 2x margin": float("nan"),
                           "category": "", "tasks": float("nan"), "p (MixedLM)": float("nan")})
    quoted = answer_table(statements(ledger))["paper (quoted)"].iloc[0]
    assert quoted.split(" | ")[0].startswith("PromptEOL: ") and quoted.split(" | ")[1].startswith("Echo: ")
    assert "quoted via" not in quoted  # each quote's source is left to the ledger
