"""The combinations none of the papers tried (repro.crosspaper.combinations): each pair's test and verdict, the
input-format pair tested with the runs as units, and the one-sentence summary, on synthetic stored scores."""

import numpy as np
import pandas as pd
import pytest

from repro.core.tasks import TASKS
from repro.crosspaper import combinations
from repro.pooling_attention.trained import converged_config


def _frame(offset=0.0, tasks=None, seed=None, noise=0.0):
    rng = np.random.default_rng(0 if seed is None else seed + 1)
    tasks = list(TASKS) if tasks is None else tasks
    frame = pd.DataFrame({"task": tasks, "category": [TASKS[t].category for t in tasks],
                          "score": 50 + np.arange(len(tasks)) + offset + noise * rng.standard_normal(len(tasks))})
    return frame if seed is None else frame.assign(model=1, seed=seed)


@pytest.fixture
def stored(monkeypatch):
    """pair_scores and converged_scores read these frames instead of the result store."""
    frames = {"pairs": {}, "runs": {"none": [], "prompteol": []}, "autoreg": (_frame().iloc[:0].assign(weights=None),) * 2}

    def pair_scores(recipe, suite):
        return frames["pairs"].get(recipe, _frame().iloc[:0])

    def converged_scores(backbone, models, seeds, suite, prompt="none"):
        runs = frames["runs"][prompt]
        return (pd.concat(runs, ignore_index=True) if runs else
                pd.DataFrame(columns=["model", "seed", "task", "category", "score"])), {}

    monkeypatch.setattr(combinations, "pair_scores", pair_scores)
    monkeypatch.setattr(combinations, "autoreg_pair", lambda backbone, suite: frames["autoreg"])
    monkeypatch.setattr(combinations, "converged_scores", converged_scores)
    return frames


def _rows(table):
    return table.set_index("question")


def test_each_filter_pair_gets_its_wilcoxon_verdict_and_a_missing_side_names_its_command(stored):
    (q1, b1, c1), (q2, b2, c2), (q3, b3, c3), (q4, b4, c4) = combinations.PAIRS
    stored["pairs"] |= {b1: _frame(), c1: _frame(-1.0), b2: _frame(), c2: _frame(0.0),
                        b3: _frame(), c3: _frame(2.0), b4: _frame(), c4: _frame(2.0, tasks=list(TASKS)[:9])}
    rows = _rows(combinations.combination_table())
    assert rows.loc[q1, "verdict"] == "the filter hurts" and rows.loc[q1, "difference"] == pytest.approx(-1.0)
    assert rows.loc[q1, "p (Wilcoxon)"] < 0.05 and rows.loc[q1, "difference, STS"] == pytest.approx(-1.0)
    assert rows.loc[q2, "verdict"] == "no significant difference"
    assert rows.loc[q3, "verdict"] == "the filter helps" and rows.loc[q3, "tasks"] == len(TASKS)
    assert rows.loc[q4, "verdict"] == (  # an untrained pair: the sweep under the tokenization of Paper 2's pages
        "not computed: repro embedfilter --backbone smollm2-135m --prompt echo --suite compact --tokenization official")
    assert np.isnan(rows.loc[q4, "difference"]) and rows.loc[q4, "tasks"] == 9
    assert "Not every EmbedFilter pair" in combinations.filter_summary(rows.reset_index())


def _filter_gains(stored, gains):
    """Every filter pair stored with the filtered side ``gain`` points above the base; the trained pairs' ids."""
    for (_, base, combined), gain in zip(combinations.PAIRS, gains):
        stored["pairs"] |= {base: _frame(), combined: _frame(gain)}
    return combinations.PAIRS[0][2], combinations.PAIRS[1][2]


def test_the_summary_says_what_the_filter_does_on_the_trained_weights(stored):
    c1, c2 = _filter_gains(stored, (0.0, -1.0, 2.0, 3.0))
    text = combinations.filter_summary(combinations.combination_table())
    assert "the filter helps none of the 2 trained models scored and hurts 1; on 1 the test finds no significant " \
           "difference, which does not show that there is none (1 more not scored yet)" in text
    assert "+3.00 (p < 0.001, the filter helps)" in text and "not a verdict about training" in text
    stored["pairs"] |= {c1: _frame(1.0)}
    assert "the filter helps 1 of the 2 trained models scored and hurts 1 (1 more not scored yet):" in combinations.filter_summary(
        combinations.combination_table())
    stored["pairs"] |= {c2: _frame(1.0)}
    assert "the filter helps all 2 trained models scored (1 more not scored yet):" in combinations.filter_summary(
        combinations.combination_table())


def test_the_input_format_pair_uses_shared_seeds_and_the_runs_as_units(stored):
    row = combinations.prompt_row()
    assert row["verdict"].startswith("not computed: python -m repro.pooling_attention.trained --converged")
    assert "--model 1" in row["verdict"] and "--prompt prompteol" in row["verdict"]
    # two seeds without a prompt, one with it: only seed 0 is compared, and one run a side is no verdict
    stored["runs"]["none"] = [_frame(0.0, seed=0), _frame(2.0, seed=1)]
    stored["runs"]["prompteol"] = [_frame(1.0, seed=0)]
    row = combinations.prompt_row()
    assert row["base"].endswith("seed 0, no prompt") and row["difference"] == pytest.approx(1.0)
    assert row["verdict"] == "untestable (one training run per method: no run-level test)"
    # three runs a side, 3 points apart with runs 0.5 apart: PromptEOL helps, tested over runs
    stored["runs"]["none"] = [_frame(0.0 + 0.5 * s, seed=s) for s in range(3)]
    stored["runs"]["prompteol"] = [_frame(3.0 + 0.5 * s, seed=s) for s in range(3)]
    row = combinations.prompt_row()
    assert row["verdict"] == "PromptEOL helps" and row["units"] == "3 vs 3 runs"
    # the same gap with runs that scatter by 4 points: the tasks agree, the runs do not settle it
    stored["runs"]["prompteol"] = [_frame(3.0 + 4 * (s - 1) ** 3, seed=s) for s in range(3)]
    assert combinations.prompt_row()["verdict"] == "no significant difference (runs as units)"


def test_the_prompt_parameter_leaves_the_plain_runs_keys_unchanged():
    assert converged_config("smollm2-135m", 1, 0, prompt="none").identity() == \
        converged_config("smollm2-135m", 1, 0).identity()
    assert converged_config("smollm2-135m", 1, 0, prompt="prompteol").identity()["prompt"] == "prompteol"


def test_autoregembeds_pair_needs_every_task_from_one_set_of_weights(stored):
    row = combinations.autoreg_row()
    assert row["kind"] == "trained (Paper 3)" and "--autoregembed" in row["verdict"] and row["tasks"] == 0
    stored["autoreg"] = (_frame().assign(weights="w1"), _frame(3.0).assign(weights="w1"))
    row = combinations.autoreg_row()
    assert row["verdict"] == "the filter helps" and row["difference"] == pytest.approx(3.0)
    stored["autoreg"] = (_frame().assign(weights="w1"), _frame(3.0).assign(weights="w2"))
    row = combinations.autoreg_row()
    assert "different weights" in row["verdict"] and np.isnan(row["difference"])


def test_the_summary_names_a_trained_pair_not_scored_yet_and_counts_it_once_scored(stored):
    c1, c2 = _filter_gains(stored, (0.0, -1.0, 2.0, 3.0))
    text = combinations.filter_summary(combinations.combination_table())
    assert "none of the 2 trained models scored" in text and "Not scored yet: trained AutoRegEmbed's encoder" in text
    stored["autoreg"] = (_frame().assign(weights="w"), _frame(2.0).assign(weights="w"))
    text = combinations.filter_summary(combinations.combination_table())
    assert "the filter helps 1 of the 3 trained models scored and hurts 1" in text and "Not scored yet" not in text


def test_scoring_autoregembeds_pair_trains_nothing_and_refuses_whitening():
    with pytest.raises(FileNotFoundError, match="stage-2 run .* is not on this machine.*--stage align"):
        combinations.evaluate_autoreg_filter()
    with pytest.raises(ValueError, match="whitening"):
        combinations.evaluate_autoreg_filter(variant="whiten/2")


def test_the_autoregembed_combination_filters_the_budget_rule_selection_once_its_search_is_complete(monkeypatch):
    from dataclasses import replace

    from repro.autoregembed.experiments import converged as p3_converged

    earlier = combinations.paper3_configs("smollm2-135m")[1]
    assert combinations.autoreg_config() == earlier  # no search stored: the Tables 1-2 run
    assert combinations.autoreg_source(earlier) == "Paper 3 Tables 1-2 run"
    picked = replace(p3_converged.base_config("smollm2-135m"), lr=2e-6, seed=2)
    monkeypatch.setattr(p3_converged, "selected_configs",
                        lambda base: {p3_converged.AUTOREG: picked, p3_converged.BASELINE: None})
    config = combinations.autoreg_config()
    assert config == replace(picked, seed=0) and config.stopping == "dev"
    assert combinations.autoreg_source(config) == "budget rule, dev-selected lr 2e-06, full, logprob, seed 0"
    with pytest.raises(FileNotFoundError, match="scripts/p3_converged.sh"):
        combinations.evaluate_autoreg_filter()


def test_the_combinations_enter_the_ledger_as_the_books_own_claims_with_one_run_no_verdict():
    import pandas as pd

    from repro.crosspaper.combinations import BOOK, PROMPT_QUESTION, SURVIVES, ledger_rows
    from repro.crosspaper.ledger_schema import COLUMNS
    from repro.verdicts.rule import is_tested

    base = {"base": "b", "combined": "c", "tasks": 19, "p (runs)": float("nan")}
    table = pd.DataFrame([
        base | {"question": "EmbedFilter edge/2 on untrained PromptEOL (Paper 2)", "kind": "untrained",
                "difference": 2.4, "p (Wilcoxon)": 0.001, "verdict": "the filter helps"},  # Paper 2's own claim
        base | {"question": "EmbedFilter edge/2 on trained Paper 1 model 5", "kind": "trained (Paper 1)",
                "difference": -2.5, "p (Wilcoxon)": 0.004, "verdict": "the filter hurts"},
        base | {"question": "EmbedFilter edge/2 on trained Paper 1 model 1", "kind": "trained (Paper 1)",
                "difference": float("nan"), "p (Wilcoxon)": float("nan"), "verdict": "not computed: repro evaluate"},
        base | {"question": PROMPT_QUESTION, "kind": "input format", "difference": 1.6, "p (Wilcoxon)": 0.12,
                "p (runs)": 0.01, "verdict": "PromptEOL helps"}])
    frame = ledger_rows(table)
    assert list(frame.columns) == COLUMNS and len(frame) == 3  # the untrained pair is Paper 2's
    rows = frame.set_index("claim")
    assert (rows["paper"] == BOOK).all() and (rows["tier"] == "book").all()
    model5 = rows.loc[f"{SURVIVES} [trained Paper 1 model 5]", "verdict"]
    assert model5 == "one run per method, no verdict (over tasks: contradicted)" and not is_tested(model5)
    assert rows.loc[f"{SURVIVES} [trained Paper 1 model 1]", "verdict"] == "missing results"
    assert rows.loc[PROMPT_QUESTION, "verdict"] == "supported"  # runs as units: its own p, at the margin


def test_a_combination_not_computed_yet_is_a_missing_ledger_row_not_an_error():
    import pandas as pd

    from repro.crosspaper.combinations import PROMPT_QUESTION, ledger_rows

    table = pd.DataFrame([{"question": PROMPT_QUESTION, "kind": "input format", "base": "b", "combined": "c",
                           "tasks": 0, "difference": float("nan"), "verdict": "not computed: repro train ..."}])
    assert ledger_rows(table)["verdict"].tolist() == ["missing results"]  # no 'p (runs)' column: still a row


def test_paper2s_methods_have_one_score_on_the_leaderboard_the_combinations_and_paper2s_pages(monkeypatch):
    from pathlib import Path

    from repro.crosspaper.leaderboard import leaderboard_runs, paper2_tokenization
    from repro.embedfilter.sweep import mean_scores, stored_scores

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(Path(__file__).resolve().parents[1] / "results"))  # committed
    assert paper2_tokenization() == "official"
    table = mean_scores(stored_scores("compact", tokenization="official")).set_index(["backbone", "prompt", "variant"])
    page = table.at[("smollm2-135m", "prompteol", "raw"), "all tasks"]  # what p2_main_table's table shows
    scores, _ = leaderboard_runs()
    assert scores[scores.method == "prompteol"]["score"].mean() == pytest.approx(page)
    assert combinations.pair_scores("smollm2-135m/prompteol")["score"].mean() == pytest.approx(page)


def test_the_short_answer_counts_an_unsettled_test_apart():
    from repro.core.stats import UNSETTLED

    table = pd.DataFrame({"kind": ["untrained", "trained (Paper 1)", "trained (Paper 1)"],
                          "difference": [3.0, 0.5, np.nan], "verdict": ["the filter helps", UNSETTLED, "not computed"],
                          "question": ["q on a", "q on b", "q on c"], "tasks": [19, 19, 0]})
    assert combinations.filter_outcome(table) == ("the filter helps none of the 1 trained model scored; on 1 the "
                                                  "test's ranks and mean disagree (unsettled) (1 more not scored yet)")


def test_a_recipe_under_one_tokenization_never_reads_the_scores_of_the_other(monkeypatch):
    from repro.recipes import recipes

    asked = []
    monkeypatch.setattr(recipes, "stored_per_task", lambda experiment, params, *a: asked.append(params) or {})
    frame, source = recipes.recipe_scores("smollm2-135m/prompteol", "compact", tokenization="official")  # empty store
    assert frame.empty and source == ("not stored: repro embedfilter --backbone smollm2-135m --prompt prompteol "
                                      "--suite compact --tokenization official, or repro evaluate --recipe "
                                      "smollm2-135m/prompteol")
    recipes.recipe_scores("smollm2-135m/prompteol", "compact", tokenization="pieces")
    # repro evaluate's scores are read under the key of the form asked: the pieces keys never answer the official
    assert asked == [{"recipe": "smollm2-135m/prompteol", "tokenization": "official"},
                     {"recipe": "smollm2-135m/prompteol"}]


def test_a_significant_filter_effect_below_the_margin_says_so(stored):
    (_, b1, c1), *_ = combinations.PAIRS
    stored["pairs"] |= {b1: _frame(), c1: _frame(-0.5)}
    row = combinations.combination_table().set_index("base").iloc[0]
    assert row["verdict"] == "the filter hurts, by less than the 1-point margin"
