"""Verdicts over seeds respect the seed spread (Paper 1 under the budget rule)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from repro.verdicts.comparison import wilcoxon_reach
from repro.verdicts.seeds import one_seed, seed_spread, seeded_claims


def _frame(offsets: dict, seeds=(0, 1, 2), noise=None, tasks=12):
    rng = np.random.default_rng(0)
    rows = []
    for model, offset in offsets.items():
        for seed in seeds:
            shift = 0.0 if noise is None else noise[model][seed]
            for t in range(tasks):
                rows.append({"model": model, "seed": seed, "task": f"t{t}", "category": "STS",
                             "score": 50 + t + offset + shift + rng.normal(0, 0.05)})
    return pd.DataFrame(rows)


def test_a_consistent_gap_between_runs_is_supported_and_one_the_runs_scatter_over_is_inconclusive():
    tight = {1: [0.0, 0.1, -0.1], 5: [0.0, 0.1, -0.1]}
    frame = _frame({1: 0.0, 5: 3.0}, noise=tight)
    spread = seed_spread(frame)
    assert spread.loc[1, "seeds"] == 3 and spread.loc[5, "all tasks"] < 0.2
    claim = ("model 5 beats model 1", 5, 1, None, "better")
    row = seeded_claims(frame, [claim]).iloc[0]
    assert row["verdict"] == "supported" and row["units"] == "3 vs 3 runs" and row["p"] < 0.01
    # the same 3-point gap, but the runs scatter by ~5 points: inconclusive, however many tasks agree
    wide = {1: [0.0, 5.0, -5.0], 5: [0.0, 5.0, -5.0]}
    noisy = seeded_claims(_frame({1: 0.0, 5: 3.0}, noise=wide), [claim]).iloc[0]
    assert noisy["verdict"] == "inconclusive" and noisy["seed spread"] > 3
    # one run per model: no run-level test, so no verdict
    single = seeded_claims(_frame({1: 0.0, 5: 3.0}, seeds=(0,)), [claim]).iloc[0]
    assert single["verdict"] == "untestable (one training run per method: no run-level test)"
    assert single["seeds"] == 1


def test_a_no_gain_statement_needs_its_interval_below_the_margin():
    wide = {1: [0.0, 5.0, -5.0], 2: [0.0, 5.0, -5.0]}
    # model 2 a little below model 1 with runs that scatter by 5 points: a failed test is no support
    unsure = seeded_claims(_frame({1: 0.0, 2: -1.0}, noise=wide), [("2 brings no gain", 2, 1, None, "no gain")])
    assert unsure.iloc[0]["verdict"] == "inconclusive" and unsure.iloc[0]["seed spread"] > 1
    assert unsure.iloc[0]["seeds (first/second)"] == "3/3"
    # the same with tight runs: the one-sided interval lies below +1 point, so the statement holds
    tight = {1: [0.0, 0.1, -0.1], 2: [0.0, 0.1, -0.1]}
    holds = seeded_claims(_frame({1: 0.0, 2: -1.0}, noise=tight), [("2 brings no gain", 2, 1, None, "no gain")])
    assert holds.iloc[0]["verdict"] == "supported" and holds.iloc[0]["margin side"] == "within"
    # model 2 consistently 3 points above with tight runs: beyond the margin, contradicted
    beaten = seeded_claims(_frame({1: 0.0, 2: 3.0}, noise=tight), [("2 brings no gain", 2, 1, None, "no gain")])
    assert beaten.iloc[0]["verdict"] == "contradicted"


def test_one_seed_marks_only_the_tested_verdicts_and_unequal_seed_counts_are_shown():
    table = pd.DataFrame({"verdict": ["supported", "untestable", "contradicted", "missing results"]})
    assert one_seed(table)["verdict"].tolist() == [
        "one run per method, no verdict (over tasks: supported)", "untestable",
        "one run per method, no verdict (over tasks: contradicted)", "missing results"]
    frame = pd.concat([_frame({1: 0.0}), _frame({5: 3.0}, seeds=(0, 1))])
    row = seeded_claims(frame, [("5 beats 1", 5, 1, None, "better")]).iloc[0]
    assert row["seeds"] == 2 and row["seeds (first/second)"] == "2/3"


def test_testability_names_the_categories_a_wilcoxon_over_tasks_can_and_cannot_test():
    text = wilcoxon_reach({"STS": 9, "Classification": 5, "Clustering": 1})
    assert "at least 6 tasks" in text and "Testable over tasks here: STS (9 tasks)." in text
    assert "Classification (5 tasks, smallest possible p 0.0625)" in text and "Clustering (1 task," in text
    assert "Testable" not in wilcoxon_reach({"Retrieval": 3})


def test_an_empty_claims_table_passes_through_the_one_run_rule():
    empty = pd.DataFrame()  # e.g. grid_claims with no grid cell
    assert one_seed(empty).empty and seeded_claims(_frame({1: 0.0}), []).empty


def _budget_table(differences, verdicts):
    return pd.DataFrame({"budget step": [30, 60, 120, 240][:len(differences)], "difference": differences,
                         "over tasks": verdicts})


def test_the_budget_verdict_says_where_a_ranking_is_significant_and_whether_it_reverses():
    from repro.training.budget_curves import budget_verdict

    steady = budget_verdict(_budget_table([-0.5, 1.2, 3.0], ["not significant", "significant: 1 better",
                                                              "significant: 1 better"]))
    assert steady.startswith("significant at 2 of 3 budgets: step 60 (1 better), 120 (1 better)")
    assert "no significant reversal" in steady and "changes 1 time)" in steady
    reverses = budget_verdict(_budget_table([-2.0, 0.1, 2.5], ["significant: 5 better", "not significant",
                                                                "significant: 1 better"]))
    assert reverses.endswith("the ranking reverses with the budget")
    never = budget_verdict(_budget_table([0.2, 0.3], ["not significant", "untestable at n=3 (smallest possible p = 0.250)"]))
    assert never == "significant at 0 of 2 budgets; never significant (the same sign of the mean difference at every budget)"
    assert budget_verdict(pd.DataFrame()) == "no budget shared by both runs is scored yet"
    # a difference of exactly 0 between two of the same sign is no change of sign
    flat = budget_verdict(_budget_table([0.4, 0.0, 0.6], ["not significant"] * 3))
    assert flat.endswith("(the same sign of the mean difference at every budget)")


def test_a_budget_curve_pairs_runs_of_the_first_seed_whose_points_are_all_stored(monkeypatch):
    from repro.pooling_attention import converged

    stored = {(1, 1), (5, 1), (1, 0), (5, 2)}  # (model, seed) with budget points
    asked = []
    monkeypatch.setattr(converged, "budget_curve", lambda backbone, model, seed, suite, tasks=None: (
        asked.append(tasks),
        pd.DataFrame({"score": [1.0]}) if (model, seed) in stored else pd.DataFrame(), {})[1:])
    assert converged.curve_seed("smollm2-135m", [1, 5], [0, 1, 2]) == 1
    assert converged.curve_seed("smollm2-135m", [1, 5], [2, 0]) is None
    assert converged.curve_seed("smollm2-135m", [1], [2, 0]) == 0
    # a backbone scored on fewer tasks (gemma3's 17) looks for its curves on those tasks
    assert converged.curve_seed("gemma3-270m", [1, 5], [1], tasks=["STS12"]) == 1 and asked[-1] == ["STS12"]


def test_the_budget_points_are_scored_on_the_runs_tasks(monkeypatch):
    from repro.pooling_attention import trained

    calls = []
    monkeypatch.setattr(trained, "evaluate_trained", lambda config, suite, tasks, **k: pd.DataFrame(
        {"task": ["STS12"], "main_score": [0.5]}))
    monkeypatch.setattr(trained, "evaluate_budget_points", lambda config, **k: calls.append(k) or pd.DataFrame(
        {"budget_step": [30], "task": ["STS12"], "main_score": [0.5]}))
    trained.main(["--converged", "--backbone", "gemma3-270m", "--model", "1", "--tasks", "STS12", "SciFact",
                  "--budget-points"])
    assert calls == [{"tasks": ["STS12", "SciFact"]}]


def test_the_converged_command_takes_the_input_format_and_keeps_the_default_runs_keys(monkeypatch):
    from repro.pooling_attention import trained

    seen = []
    monkeypatch.setattr(trained, "evaluate_trained", lambda config, *a, **k: seen.append(config) or pd.DataFrame(
        {"task": ["STS12"], "main_score": [0.5]}))
    trained.main(["--converged", "--model", "1", "--seed", "1", "--prompt", "prompteol"])
    trained.main(["--converged", "--model", "1", "--seed", "1"])
    prompted, plain = seen
    assert prompted.prompt == "prompteol" and prompted.stopping == "dev" and prompted.steps == trained.CAP
    # the plain run is the one trained earlier (same key), the prompted one is another run
    assert plain.identity() == trained.converged_config("smollm2-135m", 1, 1).identity()
    assert prompted.identity() != plain.identity()


def test_the_instruction_variant_is_compared_with_plain_inputs_per_run(monkeypatch):
    from repro.pooling_attention import converged
    from repro.pooling_attention.instructions import TANG_YANG
    from repro.training.evaluation import instructions_key

    plain = _frame({1: 0.0, 4: 0.0}, seeds=(1,))
    instructed = _frame({4: 2.0}, seeds=(1,))
    asked = []

    def scores(backbone, models, seeds, suite, tasks=None, instructions=None):
        asked.append(instructions)
        return (plain if instructions is None else instructed), {}

    monkeypatch.setattr(converged, "converged_scores", scores)
    table = converged.instruction_comparison("smollm2-135m", [1, 4])
    assert asked == [None, instructions_key(TANG_YANG)] and instructions_key(TANG_YANG).startswith("tang-yang-")
    (row,) = table.to_dict("records")  # model 1 has no instructed scores: no row
    assert (row["model"], row["seed"], row["tasks"]) == (4, 1, 12)
    assert abs(row["difference"] - 2.0) < 0.1 and row["verdict"] == "instructions help"


def test_the_deviation_table_states_our_side_from_the_configuration(tmp_path, monkeypatch):
    import pytest

    from repro.pooling_attention import deviations
    from repro.pooling_attention.trained import converged_config

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path))
    table = deviations.deviation_table(["smollm2-135m"], "compact", {"smollm2-135m": ["STS12", "STS13"]})
    ours, quoted = table["here"], table.iloc[:, 0]
    config = converged_config("smollm2-135m")
    assert f"{config.steps}-step cap" in ours["training data, budget"] and f"r {config.lora_r}," in ours["LoRA"]
    assert "smollm2-135m: 2 offline tasks" in ours["tasks"]  # the backbone's own task list counted
    assert "no run stored yet" in ours["pooling head"]  # an empty store: no head size is claimed
    assert quoted["optimiser"].startswith("lr 1e-5") and "quoted" in table.columns[0]
    monkeypatch.setattr(deviations, "converged_config", lambda b, *a, **k: converged_config(b, *a, lr=1e-3))
    assert "lr 0.001" in deviations.deviation_table(["smollm2-135m"])["here"]["optimiser"]  # follows the config
    with pytest.raises(ValueError, match="no backbone"):
        deviations.deviation_table([])


def test_every_option_the_paper1_scripts_pass_exists(capsys):
    """The long-run scripts are not run by the tests; an option renamed in the command line must not break them."""
    import re
    from pathlib import Path

    from repro.pooling_attention.trained import main

    with pytest.raises(SystemExit):
        main(["--help"])
    known = set(re.findall(r"--[a-z][a-z-]*", capsys.readouterr().out))
    scripts = Path(__file__).parent.parent / "scripts"
    passed = set()
    for script in ("p1_converged.sh", "train_p1_models.sh"):
        text = (scripts / script).read_text().replace("\\\n", " ")
        for line in text.splitlines():
            if "repro.pooling_attention.trained" in line and not line.lstrip().startswith("#"):
                line = re.sub(r"\$\{\w+:?[-+]", " ", line)  # ${EXTRAS-default}, ${VAR:+value}
                passed |= set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", line))
    assert {"--converged", "--recompute-stale", "--budget-points"} <= passed
    assert passed <= known, passed - known


def test_missing_runs_retrain_a_run_whose_weights_were_lost_with_recompute_stale(monkeypatch):
    from repro.pooling_attention.converged import describe_missing, missing_runs

    tasks = ["STS12", "STS13"]
    frame = pd.DataFrame([{"model": 1, "seed": 0, "task": t, "category": "STS", "score": 50.0} for t in tasks])
    records = {(1, 0, "STS12"): {}, (1, 0, "STS13"): {}, (1, 1, "STS12"): {}}  # seed 1: one task, then lost
    missing = missing_runs("gemma3-270m", [1], [0, 1, 2], "compact", tasks, stored=(frame, records))
    assert list(zip(missing["seed"], missing["tasks stored"])) == [(1, 1), (2, 0)]
    where = 'BACKBONE=gemma3-270m TASKS="STS12 STS13" scripts/p1_converged.sh'
    assert list(missing["command"]) == [f"RECOMPUTE_STALE=1 {where} 1:1", f"{where} 1:2"]
    text = describe_missing(missing)
    assert f"model 1 seed 2 (`{where} 1:2`)" in text and "model 1 seed 1, 1 of 2 tasks stored" in text
    assert describe_missing(missing_runs("smollm2-135m", [1], [0], stored=(frame, records), tasks=tasks)) == ""
    from repro.pooling_attention.converged import run_commands

    assert run_commands(missing) == [f"{where} 1:2", f"RECOMPUTE_STALE=1 {where} 1:1"]  # fresh runs share one
    assert "model 1 seed 1, 1 of 2 tasks stored, its weights not in this checkout" in text
    # a run being scored here (its weights in this checkout's run folder, the stored tasks scored from them)
    # resumes with the plain command; weights here that scored none of the stored tasks are stale
    import types

    import repro.pooling_attention.converged as converged_module

    here_spec = types.SimpleNamespace(weights_here=True, folder=Path("run"), load=lambda folder: (object(), {}))
    monkeypatch.setattr(converged_module, "run_spec", lambda config, progress=True: here_spec)
    monkeypatch.setattr(converged_module, "weights_digest", lambda model: "abc")
    stale = missing_runs("gemma3-270m", [1], [0, 1, 2], "compact", tasks, stored=(frame, records))
    assert list(stale["command"]) == [f"RECOMPUTE_STALE=1 {where} 1:1", f"{where} 1:2"]  # (no weights_sha256 stored)
    records[(1, 1, "STS12")] = {"weights_sha256": "abc"}
    here = missing_runs("gemma3-270m", [1], [0, 1, 2], "compact", tasks, stored=(frame, records))
    assert list(here["command"]) == [f"{where} 1:1", f"{where} 1:2"] and run_commands(here) == [f"{where} 1:1 1:2"]
    assert describe_missing(here) == f"model 1 seed 1, 1 of 2 tasks stored, model 1 seed 2 (`{where} 1:1 1:2`)"
    # the paired tests inside a task read only the runs with every task stored
    from repro.pooling_attention.converged import complete_records

    assert set(complete_records((frame, records))) == {(1, 0, "STS12"), (1, 0, "STS13")}
    assert complete_records((frame.iloc[0:0], records)) == {}


def test_the_leaderboard_asks_missing_runs_for_a_paper1_row(monkeypatch):
    from repro.crosspaper import leaderboard
    from repro.pooling_attention import converged

    tasks = list(leaderboard.TASKS)
    frame = pd.DataFrame([{"model": 2, "seed": 0, "task": t, "category": "STS", "score": 50.0} for t in tasks])
    records = {(2, 0, t): {} for t in tasks} | {(2, 1, tasks[0]): {}}  # seed 1: one task from lost weights
    monkeypatch.setattr(converged, "converged_scores", lambda *args, **kwargs: (frame, records))
    rows = leaderboard.row_table({"p1-model2": leaderboard.Row("Paper 1 model 2 (converged, 1 seed)", "P1 model 2", "1")})
    row = leaderboard.missing_rows(pd.DataFrame(columns=["method", "task", "category", "score"]), rows,
                                   run_hours=1.5).iloc[0]
    # the five seeds of smollm2-135m: seeds 2-4 fresh, seed 1's lost task retrained
    assert row["computed by"] == ("scripts/p1_converged.sh 2:2 2:3 2:4; RECOMPUTE_STALE=1 scripts/p1_converged.sh 2:1")
    assert row["estimated hours"] == 6.0  # four runs left, not five


def test_an_in_task_difference_is_consistent_only_if_significant_the_same_way_at_every_seed():
    from repro.verdicts.seeds import consistent_in_tasks

    rows = [{"comparison": "5 vs 1", "task": t, "category": "STS", "seed": s, "verdict": v}
            for t, verdicts in (("A", ["first better"] * 3), ("B", ["first better", "not significant", "first better"]),
                                ("C", ["second better"] * 3), ("D", ["first better", "second better", "first better"]),
                                ("E", ["first better"] * 2))
            for s, v in enumerate(verdicts)]
    table = consistent_in_tasks(pd.DataFrame(rows), seeds=[0, 1, 2]).set_index("task")
    assert table["outcome"].to_dict() == {"A": "first better at every seed", "B": "not consistent",
                                          "C": "second better at every seed", "D": "not consistent",
                                          "E": "not consistent"}  # E lacks seed 2
    assert table.loc["E", "seeds"] == 2
