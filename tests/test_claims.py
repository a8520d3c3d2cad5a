"""Claims with verdicts: the paired test decides, the paper's direction sets supported vs contradicted."""

import numpy as np
import pandas as pd
import pytest

from repro.autoregembed.claims import (
    ablation_claims,
    best_contrastive,
    data_efficiency_claims,
    data_efficiency_differences,
    headline_table,
    measured_spread,
    memory_claim,
    not_reproduced,
    seed_spread,
    table_claims,
)
from repro.autoregembed.experiments.ablations import grid_label
from repro.verdicts.comparison import claim_verdict, claims_table
from repro.verdicts.multiplicity import with_adjusted_p
from repro.verdicts.rule import ONE_RUN, few_runs, is_tested


def scores(columns: dict, categories=("STS",) * 8) -> pd.DataFrame:
    index = pd.MultiIndex.from_tuples([(c, f"{c}{i}") for i, c in enumerate(categories)], names=["category", "task"])
    return pd.DataFrame(columns, index=index)


def test_claim_verdict_reads_the_direction_the_paper_expects():
    rng = np.random.default_rng(0)
    base = rng.uniform(40, 60, 8)
    wide = scores({"a": base + 5 + rng.uniform(0, 1, 8), "b": base, "c": base + rng.normal(0, 1, 8)})
    assert claim_verdict(wide, "a beats b", "a", "b", "STS", "better")["verdict"] == "supported"
    assert claim_verdict(wide, "b beats a", "b", "a", "STS", "better")["verdict"] == "contradicted"
    assert claim_verdict(wide, "a is worse", "a", "b", "STS", "worse")["verdict"] == "contradicted"
    assert claim_verdict(wide, "b is worse", "b", "a", None, "worse")["verdict"] == "supported"
    assert claim_verdict(wide, "a no gain", "a", "b", "STS", "no gain")["verdict"] == "contradicted"
    noise = claim_verdict(wide, "c beats b", "c", "b", "STS", "better")
    assert noise["p (Wilcoxon)"] >= 0.05
    assert noise["verdict"] == "inconclusive"  # a failed test is never support for "no gain"
    # c is b plus noise of SD 1 over 8 tasks: its one-sided interval stays below the 1-point margin
    assert claim_verdict(wide, "c no gain", "c", "b", "STS", "no gain")["verdict"] == "supported"
    # c is well below a: "not better" holds, and says by how much it is worse
    assert claim_verdict(wide.iloc[:6] + 0, "c no gain", "c", "a", "STS", "no gain")["verdict"] == \
        "supported, worse by 5.2"
    assert claim_verdict(wide, "b no gain", "b", "a", "STS", "no gain")["verdict"].startswith(
        "supported, worse by")
    same = scores({"a": base, "b": base + rng.normal(0, 0.05, 8)})  # within the margin, tightly: equivalent
    assert claim_verdict(same, "a ~ b", "a", "b", "STS", "equal")["verdict"] == "supported"
    assert claim_verdict(wide, "x", "a", "missing", "STS")["verdict"] == "missing results"
    assert claim_verdict(wide, "x", "a", "b", "Retrieval")["verdict"] == "missing results"
    with pytest.raises(ValueError, match="unknown expectation"):
        claim_verdict(wide, "x", "a", "b", "STS", "higher")


def test_a_significant_test_whose_mean_points_the_other_way_is_inconclusive():
    from repro.core.stats import UNSETTLED, wilcoxon_over_tasks
    from repro.verdicts.comparison import DISAGREE

    gains = np.array([1.0 + 0.01 * i for i in range(11)] + [-30.0])  # many small gains, one large loss
    wide = scores({"a": 50 + gains, "b": np.full(12, 50.0)}, categories=("STS",) * 12)
    row = claim_verdict(wide, "a beats b", "a", "b", "STS", "better")
    assert row["p (Wilcoxon)"] < 0.05 and row["difference"] < 0  # the signed ranks favour a, the mean b
    assert row["verdict"] == DISAGREE
    even = np.array([1.0] * 12 + [-12.0])  # a mean of exactly 0 settles no direction either
    test = wilcoxon_over_tasks(50 + even, np.full(13, 50.0))
    assert test["p"] < 0.05 and test["mean_difference"] == 0 and test["verdict"] == UNSETTLED
    assert wilcoxon_over_tasks(50 + np.abs(gains), np.full(12, 50.0))["verdict"] == "significant: first better"
    assert claim_verdict(wide, "b beats a", "b", "a", "STS", "better")["verdict"] == DISAGREE


def test_two_datasets_are_untestable_not_a_verdict():
    wide = scores({"a": [60.0, 70.0], "b": [50.0, 60.0]}, categories=("Retrieval", "Retrieval"))
    row = claims_table(wide, [("a beats b", "a", "b", "Retrieval", "better")]).iloc[0]
    assert row["verdict"].startswith("untestable at n=2") and row["paired"] == 2
    assert row["95% CI (bootstrap)"].startswith("n/a")  # no interval from a bootstrap over 2 units


def test_paper3_tables_claims_pick_the_best_contrastive_baseline_and_list_what_failed():
    rng = np.random.default_rng(1)
    base = rng.uniform(30, 50, 8)
    wide = scores({"last token": base, "compression only": base + 10 + rng.uniform(0, 1, 8),
                   "AutoRegEmbed": base + 10 + rng.normal(0, 1, 8), "last token, in-batch": base + 20,
                   "mean, in-batch": base + 1})
    assert best_contrastive(wide) == "last token, in-batch"
    claims = table_claims(wide)
    sts = claims[claims.category == "STS"].set_index("comparison")["verdict"]
    assert sts["compression only vs last token"] == "supported"
    assert sts["AutoRegEmbed vs compression only"] == "inconclusive"
    assert sts["AutoRegEmbed vs last token, in-batch"] == "contradicted"
    assert set(claims[claims.category == "Retrieval"]["verdict"]) == {"missing results"}
    failed = not_reproduced(claims)
    # tested and not supported: the inconclusive and the contradicted STS rows; missing retrieval rows are not listed
    assert sorted(failed["verdict"]) == ["contradicted", "inconclusive"]
    table = headline_table(wide)
    assert list(table.index[:3]) == ["last token", "last token, in-batch", "mean, in-batch"]  # the paper's order
    assert table.loc["AutoRegEmbed", "STS average"] == pytest.approx(wide["AutoRegEmbed"].mean())


def test_data_efficiency_tests_every_size_with_the_runs_as_units():
    rows = [{"method": m, "examples": n, "seed": s, "STS average": 50 + np.log2(n) + (3 if m == "AutoRegEmbed" else 0)
             + s / 10} for m in ("AutoRegEmbed", "mean, in-batch") for n in (64, 128, 256, 512) for s in (0, 1, 2)]
    every = data_efficiency_claims(pd.DataFrame(rows))
    # beside "at every size": Figure 1's front (one comparison a size, against the strongest baseline there) and
    # Figure 3's few samples (AutoRegEmbed at the size nearest 30% of the largest against the baseline at the largest)
    from repro.autoregembed.claims import FEW_SAMPLES, PARETO

    assert every["statement"].value_counts().to_dict() == {
        "AutoRegEmbed beats mean, in-batch at equal training data, at every size (Figure 3)": 4, PARETO: 4,
        FEW_SAMPLES: 1}
    assert every[every["statement"] == FEW_SAMPLES]["comparison"].tolist() == [
        "AutoRegEmbed at 128 vs mean, in-batch at 512"]
    claims = every[every["statement"].str.endswith("(Figure 3)")]
    assert list(claims["category"]) == ["64 triplets", "128 triplets", "256 triplets", "512 triplets"]
    assert set(claims["units"]) == {"3 vs 3 runs"} and set(claims["verdict"]) == {"supported"}
    one = data_efficiency_claims(pd.DataFrame(rows)[lambda f: f.seed == 0])
    assert set(one["verdict"]) == {"untestable (one training run per method: no run-level test)"}


def test_data_efficiency_tests_alignment_against_the_compression_only_line():
    rows = [{"method": m, "examples": n, "seed": s, "STS average": 50 + np.log2(n) / 10 + s / 10 - (4 if m == "AutoRegEmbed" else 0)}
            for m in ("AutoRegEmbed", "mean, in-batch") for n in (64, 128, 256, 512, 1024) for s in (0, 1, 2)]
    references = pd.Series({"compression only": 50.0, "PromptEOL": 60.0})
    claims = data_efficiency_claims(pd.DataFrame(rows), references=references)
    assert list(dict.fromkeys(claims["comparison"])) == ["AutoRegEmbed vs mean, in-batch",
                                                        "AutoRegEmbed vs compression only", "AutoRegEmbed vs PromptEOL",
                                                        "AutoRegEmbed at 256 vs mean, in-batch at 1024"]
    prompt = claims[claims.comparison == "AutoRegEmbed vs PromptEOL"]  # 6-10 points below the fixed PromptEOL
    assert list(prompt["units"].unique()) == ["3 runs vs one fixed model"]  # PromptEOL is training-free
    assert set(prompt["verdict"]) == {"contradicted"} and prompt["statement"].iloc[0].startswith(
        "AutoRegEmbed beats training-free prompt methods")
    # compression only is a trained stage 1 with one run: a side too small for a test, never a fixed model
    below = claims[claims.comparison == "AutoRegEmbed vs compression only"]
    assert set(below["verdict"]) == {ONE_RUN} and set(below["mean second"]) == {50.0}
    assert below["statement"].iloc[0].startswith("alignment improves on compression only")
    # 5 sizes x (mean, PromptEOL), 5 for Figure 1's front, 1 for Figure 3's few samples
    assert len(data_efficiency_claims(pd.DataFrame(rows), references=references.drop("compression only"))) == 16
    # stage-2 seeds that share one stage 1 are one independent run: nothing about AutoRegEmbed is testable
    shared = pd.DataFrame(rows).assign(unit=lambda f: np.where(f.method == "AutoRegEmbed", "stage 1 a",
                                                               "run " + f.seed.astype(str)))
    one = data_efficiency_claims(shared, references=references)
    assert not any(is_tested(v) for v in one["verdict"])
    assert set(one[one.comparison == "AutoRegEmbed vs PromptEOL"]["verdict"]) == {ONE_RUN}
    two = shared.assign(unit=lambda f: np.where((f.method == "AutoRegEmbed") & (f.seed == 2), "stage 1 b", f.unit))
    assert set(data_efficiency_claims(two)["verdict"]) == {few_runs(2, 3)}
    per_size = data_efficiency_differences(pd.DataFrame(rows), references=references)
    assert per_size.loc[("compression only", 64), "seeds"] == 3
    assert per_size.loc[("compression only", 64), "mean difference"] == pytest.approx(50 + 0.6 + 0.1 - 4 - 50)
    assert per_size.loc[("mean, in-batch", 1024), "smallest"] == pytest.approx(-4)


def test_ablation_claims_quote_the_paper_and_skip_the_temperature_grid():
    rng = np.random.default_rng(2)
    base = rng.uniform(40, 60, 8)
    wide = scores({"full (Eq. 2, sigmoid)": base, "KL divergence": base - 3 - rng.uniform(0, 1, 8),
                   "tanh": base + rng.normal(0, 1, 8), grid_label(0.05, 0.1): base,
                   "reference added (official code)": base + 2 + rng.uniform(0, 1, 8)})
    claims = ablation_claims(wide).set_index("comparison")
    code = claims.loc["reference added (official code) vs full (Eq. 2, sigmoid)"]
    assert "not test it" in code["statement"] and code["verdict"] == "contradicted"  # it does better
    claims = claims.drop(code.name)
    assert list(claims.index) == ["KL divergence vs full (Eq. 2, sigmoid)", "tanh vs full (Eq. 2, sigmoid)"]
    assert claims.loc["KL divergence vs full (Eq. 2, sigmoid)", "verdict"] == "supported"
    assert claims.loc["KL divergence vs full (Eq. 2, sigmoid)", "paper (quoted STS average)"] == 79.82
    # the paper says tanh performs similarly: an equivalence claim, never "worse than the full loss"
    tanh = claims.loc["tanh vs full (Eq. 2, sigmoid)"]
    assert tanh["expected"] == "equal" and tanh["statement"].startswith("tanh performs similarly")
    assert tanh["verdict"] == "supported"  # noise of SD 1 on 8 tasks: the interval inside +-1


def test_memory_claim_is_supported_only_if_alignment_is_lighter_at_every_batch_size():
    costs = pd.DataFrame([{"objective": o, "batch_size": b, "peak_mb_above_model": mb, "step_seconds": 1.0}
                          for o, b, mb in [("align", 4, 90), ("contrastive", 4, 100), ("align", 8, 210),
                                           ("contrastive", 8, 200)]])
    claim = memory_claim(costs)
    assert claim["memory align / contrastive"] == [0.9, 1.05] and claim["verdict"] == "does not hold (measured)"
    costs.loc[costs.objective == "align", "peak_mb_above_model"] = 50
    assert memory_claim(costs)["verdict"] == "holds (measured)"
    costs.loc[0, "peak_mb_above_model"] = np.nan  # a failed measurement is not a verdict
    assert memory_claim(costs)["verdict"] == "missing results"
    costs.loc[0, "peak_mb_above_model"] = 90
    costs.loc[costs.objective == "contrastive", "peak_mb_above_model"] = 0  # a zero baseline: ratio inf, not a result
    assert memory_claim(costs)["verdict"] == "missing results"


def test_training_curves_pick_the_stored_runs_of_the_configs_and_plot_one_legend(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    from repro.training import curves as tc
    from repro.training.contrastive import TrainConfig

    wanted, other = TrainConfig(model=5, steps=4), TrainConfig(model=5, steps=8)
    rows = [{"step": s, "train_loss": float(s), "validation_sts": None if s % 2 else 50.0 + s} for s in range(1, 5)]
    monkeypatch.setattr(tc, "stored_runs", lambda backbone: [{"params": {"train": other.identity()}, "rows": rows[:1]},
                                                             {"params": {"train": wanted.identity()}, "rows": rows}])
    curves = tc.training_curves([wanted], rolling=2)
    assert curves["step"].tolist() == [1, 2, 3, 4] and set(curves["model"]) == {"5"}
    assert curves["train loss (rolling 2)"].tolist() == [1.0, 1.5, 2.5, 3.5]
    fig = tc.plot_training_curves(curves)
    # one legend (the same hues and styles on both panels), below the panels: never over a curve, the width kept
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)
    assert fig.legends[0].get_window_extent().y1 <= min(ax.get_window_extent().y0 for ax in fig.axes)
    assert fig.get_size_inches()[0] <= 8
    with pytest.raises(ValueError, match="none of these runs is stored"):
        tc.training_curves([TrainConfig(model=1, steps=4)])


def test_autoreg_training_curves_read_both_stages_and_skip_validation_rows_in_the_rolling_loss(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    from repro.autoregembed.config import AlignConfig, CompressConfig
    from repro.autoregembed.experiments import curves
    from repro.autoregembed.experiments.curves import autoreg_training_curves, plot_autoreg_training_curves
    from repro.autoregembed.train import RUNS_EXPERIMENT, run_params

    compress = CompressConfig(steps=4)
    align, missing = AlignConfig(compress=compress, steps=2), AlignConfig(compress=compress, steps=3)
    stored = {
        str(run_params(compress)): [{"step": 0, "train_loss": None, "validation_loss": 11.0},
                                    {"step": 1, "train_loss": 10.0}, {"step": 2, "train_loss": 8.0},
                                    {"step": 2, "train_loss": 8.0, "validation_loss": 7.5}],
        str(run_params(align)): [{"step": 0, "lr": None, "train_loss": None, "validation_sts": 40.0},
                                 {"step": 1, "lr": 1.0, "train_loss": 0.7}, {"step": 2, "lr": 0.5, "train_loss": 0.5},
                                 {"step": 2, "lr": None, "train_loss": 0.5, "validation_sts": 45.0}],
    }

    def fake_load(experiment, params):
        assert experiment == RUNS_EXPERIMENT
        rows = stored.get(str(params))
        return None if rows is None else {"rows": rows}

    monkeypatch.setattr(curves, "load_result", fake_load)
    curves = autoreg_training_curves({"stage 1": compress, "stage 2": align, "not trained": missing}, rolling=2)
    assert set(curves.run) == {"stage 1", "stage 2"}
    assert curves[curves.stage == "compress"]["train loss (rolling 2)"].dropna().tolist() == [10.0, 9.0]
    assert curves[curves.stage == "align"]["validation_sts"].dropna().tolist() == [40.0, 45.0]
    # the validation row that repeats step 2's loss is not counted twice
    assert curves[curves.stage == "align"]["train loss (rolling 2)"].dropna().tolist() == [0.7, 0.6]
    fig = plot_autoreg_training_curves(curves)
    assert len(fig.axes) == 3
    with pytest.raises(ValueError, match="none of these AutoRegEmbed runs is stored"):
        autoreg_training_curves({"not trained": missing})
    with pytest.raises(ValueError, match="rolling"):
        autoreg_training_curves({"stage 1": compress}, rolling=0)


def test_pareto_front_keeps_only_undominated_points():
    from repro.autoregembed.experiments.data_efficiency import pareto_front

    points = pd.DataFrame({"examples": [64, 128, 256, 256, 1024], "STS average": [50.0, 49.0, 55.0, 54.0, 55.0]})
    assert pareto_front(points).tolist() == [True, False, True, False, False]


def test_adjusted_p_values_cover_only_the_tested_rows():
    from scipy.stats import false_discovery_control

    claims = pd.DataFrame({"p (Wilcoxon)": [0.01, 0.04, 0.5, 0.3, 0.02],
                           "verdict": ["supported", "contradicted", "untestable",
                                                    "not supported (no significant difference)",
                                                    "inconclusive (within the seed spread)"]})
    adjusted = with_adjusted_p(claims)["p (BH)"]
    assert np.isnan(adjusted[2])  # a verdict within the seed spread was still a test: it counts
    np.testing.assert_allclose(adjusted[[0, 1, 3, 4]], false_discovery_control([0.01, 0.04, 0.3, 0.02]))
    assert (adjusted[[0, 1, 3]].to_numpy() >= claims["p (Wilcoxon)"][[0, 1, 3]].to_numpy()).all()


def test_a_test_read_by_two_statements_counts_once_in_the_adjustment():
    from scipy.stats import false_discovery_control

    claims = pd.DataFrame({"comparison": ["5 vs 4", "5 vs 1", "4 vs 5", "5 vs 1"],
                           "category": ["STS", "STS", "STS", "STS"], "paired": [9, 9, 9, 9],
                           "difference": [2.0, 3.0, -2.0, 1.0], "p (Wilcoxon)": [0.02, 0.04, 0.02, 0.6],
                           "verdict": ["supported"] * 4})
    adjusted = with_adjusted_p(claims)["p (BH)"]
    # rows 0 and 2 read one test (either order); row 3 compares the same models on other data (another page)
    once = false_discovery_control([0.02, 0.04, 0.6])
    np.testing.assert_allclose(adjusted, [once[0], once[1], once[0], once[2]])
    assert not np.allclose(adjusted, false_discovery_control([0.02, 0.04, 0.02, 0.6]))  # counted twice it differs
    # without a comparison and a category to name the test by, every row is its own test
    bare = claims.drop(columns=["comparison"])
    np.testing.assert_allclose(with_adjusted_p(bare)["p (BH)"], false_discovery_control([0.02, 0.04, 0.02, 0.6]))


def test_seed_spread_is_the_sd_across_seeds_of_one_configuration():
    curve = pd.DataFrame([{"method": "A", "examples": n, "seed": s, "STS average": v}
                          for n, vals in ((64, (50.0, 51.0)), (128, (52.0, 55.0))) for s, v in enumerate(vals)])
    spread = seed_spread(curve).loc["A"]  # the SD (ddof 1) over seeds, as every other page's spread
    assert spread["median seed spread"] == pytest.approx(np.median([np.std([50, 51], ddof=1), np.std([52, 55], ddof=1)]))
    assert spread["largest seed spread"] == pytest.approx(np.std([52, 55], ddof=1)) and spread["sizes"] == 2


def test_single_run_comparisons_get_no_verdict_and_the_spread_is_shown_for_scale():
    from repro.verdicts.seeds import one_seed

    curve = pd.DataFrame([{"method": m, "examples": n, "seed": s, "STS average": v}
                          for m, rows in (("AutoRegEmbed", ((64, (50.0, 50.6)), (128, (52.0, 53.0)))),
                                          ("last token", ((64, (40.0, 40.3)),)))
                          for n, vals in rows for s, v in enumerate(vals)])
    spread, text = measured_spread(curve)
    assert spread == pytest.approx(np.median([np.std([50, 50.6], ddof=1), np.std([52, 53], ddof=1)]))
    assert "gets no verdict" in text and "the other methods: last token 0.21" in text
    claims = pd.DataFrame({"difference": [0.5, -2.0, 0.3], "expected": ["better", "better", "worse"],
                           "verdict": ["supported", "contradicted", "untestable at n=2 tasks"]})
    marked = one_seed(claims)["verdict"].tolist()
    assert marked == ["one run per method, no verdict (over tasks: supported)",
                      "one run per method, no verdict (over tasks: contradicted)", "untestable at n=2 tasks"]
    assert claims["verdict"][0] == "supported"  # the input is left alone
    unmeasured, text = measured_spread(curve[curve.seed == 0])
    assert np.isnan(unmeasured) and "unmeasured" in text
    assert np.isnan(measured_spread(curve.iloc[0:0])[0])


def test_the_stored_curve_reads_only_complete_stored_points_and_never_trains(monkeypatch):
    from repro.autoregembed.config import AlignConfig
    from repro.autoregembed.experiments import data_efficiency

    def no_training(*a, **k):
        raise AssertionError("the stored curve must not train or score")

    monkeypatch.setattr(data_efficiency, "evaluate_autoreg", no_training)
    base = AlignConfig(backbone="smollm2-135m")
    assert data_efficiency.stored_autoreg_curve(base, [64, 128], [0, 1], 1.0, "small", ["STS12", "STS13"]).empty
    stored = {64: {"STS12": 0.5, "STS13": 0.7}, 128: {"STS12": 0.6}}  # size 128 lacks a task: left out

    def fake_stored(experiment, identity, suite, tasks):
        size = identity["config"]["train_examples"]
        return {t: {"rows": [{"main_score": v}]} for t, v in stored.get(size, {}).items()}

    monkeypatch.setattr(data_efficiency, "stored_per_task", fake_stored)
    curve = data_efficiency.stored_autoreg_curve(base, [64, 128], [0, 1], 1.0, "small", ["STS12", "STS13"])
    assert curve["examples"].tolist() == [64, 64] and curve["seed"].tolist() == [0, 1]
    assert curve["STS average"].tolist() == pytest.approx([60.0, 60.0]) and (curve["steps"] == 8).all()


def test_grid_claims_test_appendix_f_against_the_papers_choice_and_friedman_sees_a_flat_grid():
    from repro.autoregembed.claims import grid_claims, grid_friedman

    rng = np.random.default_rng(3)
    base = rng.uniform(40, 60, 8)
    cells = {grid_label(t, b): base + rng.normal(0, 0.5, 8) for t in (0.02, 0.05, 0.1) for b in (0.05, 0.1, 0.2)}
    cells |= {grid_label(1.0, b): base - 4 - rng.uniform(0, 1, 8) for b in (0.05, 0.1, 0.2)}
    wide = scores(cells | {"full (Eq. 2, sigmoid)": base})
    claims = grid_claims(wide).set_index("comparison")
    # tau 0.02 and 0.1 at beta 0.1; tau 1.0 at 3 betas; beta 0.05 and 0.2 at tau 0.05; and "stable elsewhere":
    # every cell of tau 0.02, 0.05, 0.1 but the chosen one, as equivalence to it; tau 0.05 with beta 0.2 against
    # each change alone (beta 0.1 at tau 0.05, beta 0.2 at tau 0.1)
    from repro.autoregembed.claims import TOGETHER

    stable = claims[claims["statement"].str.startswith("the results are stable")]
    assert len(claims) == 7 + 8 + 2 and len(stable) == 8 and set(stable["expected"]) == {"equal"}
    assert sorted(claims[claims["statement"] == TOGETHER].index) == [
        "tau=0.05, beta=0.2 vs tau=0.05, beta=0.1", "tau=0.05, beta=0.2 vs tau=0.1, beta=0.2"]
    claims = claims[claims["statement"] != TOGETHER]
    assert set(stable["verdict"]) == {"supported"}  # noise of SD 0.5 on 8 tasks, inside +-1
    claims = claims[~claims["statement"].str.startswith("the results are stable")]
    assert set(claims.loc[[f"tau=1.0, beta={b} vs tau=0.05, beta={b}" for b in (0.05, 0.1, 0.2)],
                          "verdict"]) == {"supported"}
    assert claims.loc["tau=0.02, beta=0.1 vs tau=0.05, beta=0.1", "verdict"] == "inconclusive"
    # no gain, with noise of SD 0.5 over 8 tasks: the one-sided interval stays below the 1-point margin
    assert claims.loc["tau=0.05, beta=0.2 vs tau=0.05, beta=0.1", "verdict"] == "supported"
    # without the chosen cell: tau=1.0 vs tau=0.05 at beta 0.05 and 0.2, and tau 0.05 with beta 0.2 vs tau 0.1 there
    assert len(grid_claims(wide.drop(columns=["tau=0.05, beta=0.1"]))) == 3
    flat = grid_friedman(wide.drop(columns=[c for c in wide.columns if c.startswith("tau=1.0")]))
    assert flat["cells"] == 9 and flat["tasks"] == 8 and flat["p (Friedman)"] > 0.05
    assert grid_friedman(wide)["p (Friedman)"] < 0.001  # the tau = 1.0 row differs
    assert np.isnan(grid_friedman(wide[["full (Eq. 2, sigmoid)"]])["p (Friedman)"])


def test_identical_scores_are_no_difference_only_where_a_difference_could_have_been_significant():
    from repro.core.stats import wilcoxon_over_tasks

    assert wilcoxon_over_tasks([50.0] * 8, [50.0] * 8)["verdict"] == "no difference"
    assert wilcoxon_over_tasks([50.0], [50.0])["verdict"].startswith("untestable at n=1")
    wide = scores({"a": [50.0], "b": [50.0]}, categories=("STS",))
    assert claim_verdict(wide, "a beats b", "a", "b", "STS")["verdict"].startswith("untestable at n=1")


def test_the_ledger_keeps_each_claims_verdict_and_names_its_comparison():
    from repro.crosspaper import ledger, ledger_paper2
    from repro.pooling_attention.claims import TABLE_CLAIMS

    rng = np.random.default_rng(1)
    base = rng.uniform(40, 60, 8)
    wide = scores({1: base, 4: base + rng.uniform(-0.2, 0.2, 8), 5: base + 5 + rng.uniform(0, 1, 8)})
    claims = claims_table(wide, [c for c in TABLE_CLAIMS if {c[1], c[2]} <= {1, 4, 5} and c[3] == "STS"])
    rows = ledger.from_claims(1, claims, "a scale", "p1_tables")
    assert list(rows.columns) == ledger.COLUMNS and len(rows) == len(claims)
    assert rows["verdict"].tolist() == claims["verdict"].tolist()  # never re-judged
    assert rows["verdict"].eq("supported").all() and rows["claim"].str.contains(r"\[STS, 5 vs [14]\]").all()
    assert rows["statistic"].str.match(r"p (= 0\.\d+|< 0\.001), 8 tasks").all() and rows["current"].all()
    assert rows["tier"].eq(ledger.HEADLINE).all() and rows["p"].lt(0.05).all()
    from repro.crosspaper import statements as ledger_statements

    statements = ledger_statements.statements(ledger.adjusted(rows))
    assert len(statements) == 2 and statements["comparisons"].sum() == len(rows)  # one verdict per statement
    itself = rows.iloc[:2].assign(difference=[0.0, 3.0], verdict=["not testable (the same model on both sides)", "supported"])
    assert ledger_statements.statements(ledger.adjusted(itself))["ours"].tolist() == ["+3.00"]  # itself: no range end
    # a statement measured in two units (a correlation and a log frequency) shows one range per unit, each named;
    # a statistic's own unit is named even alone, a score's points only beside another unit
    mixed = rows.iloc[:2].assign(difference=[0.25, 2.5], metric=["rho", "log-frequency"])
    assert ledger_statements.statements(ledger.adjusted(mixed))["ours"].tolist() == ["+0.25 (rho); +2.50 (nats)"]
    cka = rows.iloc[:2].assign(difference=[13.0, 15.0], metric="CKA")
    assert ledger_statements.statements(ledger.adjusted(cka))["ours"].tolist() == ["+13.00 to +15.00 (CKA x100)"]
    score_and_rho = rows.iloc[:2].assign(difference=[3.0, 0.2], metric=["", "rho"])
    assert ledger_statements.statements(ledger.adjusted(score_and_rho))["ours"].tolist() == [
        "+3.00 (points x100); +0.20 (rho)"]
    counts = ledger_statements.verdict_counts(pd.concat([statements, statements.iloc[:1].assign(verdict="untestable",
                                                                                     statement="another")]))
    assert counts.loc[(ledger.PAPERS[1], ledger.HEADLINE)].to_dict() == {"supported": 2, "untestable": 1}
    short, legend = ledger.scale_legend(pd.concat([rows, rows.assign(scale="another scale")]))
    assert short["scale"].tolist() == ["S1"] * len(rows) + ["S2"] * len(rows)
    assert legend == [f"S1: {rows['scale'].iloc[0]}", "S2: another scale"] and rows["scale"].nunique() == 1
    tests, legend = ledger.scale_legend(rows.assign(test=["a", "b"] * (len(rows) // 2) + ["a"] * (len(rows) % 2)), "T", "test")
    assert tests["test"].tolist()[:2] == ["T1", "T2"] and legend == ["T1: a", "T2: b"] and len(rows) > 1
    quoted, legend = ledger.scale_legend(rows.assign(q=[ledger.NOT_QUOTED] + ["x"] * (len(rows) - 1)), "Q", "q",
                                         keep=(ledger.NOT_QUOTED,))
    assert quoted["q"].tolist()[:2] == [ledger.NOT_QUOTED, "Q1"] and legend == ["Q1: x"]
    assert "Qwen2.5-0.5B: +4.50" in ledger_paper2._quoted_gain("prompteol", "edge/2")
    assert "Qwen2.5-0.5B: -4.50" in ledger_paper2._quoted_gain("prompteol", "edge/2", sign=-1)  # raw first
    assert ledger_paper2._quoted_gain("prompteol", "edge/16") == ledger.NOT_QUOTED


def test_the_ledgers_paper_view_states_each_statement_once_over_its_rows():
    from repro.crosspaper import ledger

    rows = pd.DataFrame({"claim": ["A [STS, 5 vs 1]", "B (paper: 1 vs 2)", "A [Retrieval, 5 vs 1]", "B (paper: 1 vs 2)"],
                         "scale": ["S1", "S1", "S1", "S2"], "paper (quoted)": [ledger.NOT_QUOTED, "83.2", ledger.NOT_QUOTED,
                                                                             "83.2"], "verdict": list("abcd")})
    view = ledger.paper_view(rows)
    assert view.index.tolist() == [("A", "STS, 5 vs 1"), ("A", "Retrieval, 5 vs 1"), ("B (paper: 1 vs 2)", ""),
                                   ("B (paper: 1 vs 2)", "")]  # grouped in order of first appearance, rows kept
    assert view["verdict"].tolist() == list("acbd") and view["paper (quoted)"].tolist() == ["-", "-", "83.2", "83.2"]
    assert "rowspan=\"2\"" in view.to_html()  # the page states each statement once
    assert "paper (quoted)" not in ledger.paper_view(rows.assign(**{"paper (quoted)": ledger.NOT_QUOTED})).columns


def test_the_ledger_lists_table5s_statements_at_both_budgets(monkeypatch):
    from repro.core.tasks import TASKS
    from repro.crosspaper import ledger, ledger_paper1
    from repro.pooling_attention.claims import ROBUSTNESS_CLAIMS

    tasks = [t for t in TASKS if TASKS[t].category in ("STS", "Classification")]
    rng = np.random.default_rng(3)
    base = dict(zip(tasks, rng.uniform(40, 60, len(tasks))))
    earlier = pd.DataFrame([{"model": m, "task": t, "category": TASKS[t].category, "main_score": (b + m) / 100}
                            for m in (1, 2, 3, 4, 5) for t, b in base.items()])
    monkeypatch.setattr(ledger_paper1, "evaluate_models", lambda *a, **k: earlier)
    converged = {"frame": pd.DataFrame(columns=["model", "seed", "task", "category", "score"])}
    monkeypatch.setattr(ledger_paper1, "converged_scores", lambda *a, **k: (converged["frame"], {}))
    parts = ledger_paper1.table5_rows("standard")
    assert (parts[0]["page"] == "p1_robustness").all() and parts[1].empty  # no converged run stored: no row
    assert len(parts[0]) == len(ROBUSTNESS_CLAIMS) and parts[0]["claim"].str.startswith("Table 5: ").all()
    assert not parts[0]["current"].any() and parts[0]["tier"].eq(ledger.ABLATION).all()  # the earlier budget
    tested = parts[0]["verdict"][~parts[0]["verdict"].str.startswith("untestable")]  # classification: 5 tasks
    assert len(tested) == len(ROBUSTNESS_CLAIMS) - 1 and tested.str.startswith("one run per method, no verdict").all()
    # models 1, 4 and 5 at three seeds each on the second backbone: only the statements about them, runs as units
    converged["frame"] = pd.DataFrame([{"model": m, "seed": s, "task": t, "category": TASKS[t].category,
                                        "score": b + 3 * (m == 5) + rng.normal(0, 0.1)}
                                       for m in (1, 4, 5) for s in (0, 1, 2) for t, b in base.items()])
    parts = ledger_paper1.table5_rows("standard")
    now = parts[1]
    assert (now["page"] == "p1_converged").all() and "seeds per model (model 1: 3, model 4: 3, model 5: 3)" in (
        now["scale"].iloc[0])
    assert sorted(now["claim"].str.extract(r"(\d vs \d)")[0]) == ["4 vs 1", "5 vs 1", "5 vs 1", "5 vs 1"]
    sts = now[now["claim"].str.contains(r"\[STS")]
    assert sts["verdict"].tolist() == ["supported"] and sts["statistic"].str.endswith("3 vs 3 runs").all()


def test_the_ledger_lists_paper3s_budget_rule_claims_once_they_are_scored(monkeypatch):
    from repro.autoregembed.experiments import converged
    from repro.crosspaper import ledger, ledger_paper3

    assert ledger_paper3.paper3_converged_rows("standard").empty  # nothing of the search is committed yet
    rng = np.random.default_rng(3)
    tasks = [("STS", f"STS{i}") for i in range(9)] + [("Retrieval", "SciFact"), ("Retrieval", "NFCorpusPreprocessed")]
    base = rng.uniform(40, 60, len(tasks))
    rows = [{"model": m, "seed": s, "task": t, "category": c, "score": b + shift + rng.normal(0, 0.1)}
            for m, shift in ((converged.AUTOREG, 3.0), (converged.COMPRESSION, 0.0), (converged.BASELINE, 6.0))
            for s in (0, 1, 2) for (c, t), b in zip(tasks, base)]
    monkeypatch.setattr(converged, "final_scores", lambda *a, **k: (pd.DataFrame(rows), {}))
    table = ledger_paper3.paper3_converged_rows("standard")
    assert list(table.columns) == ledger.COLUMNS and len(table) == len(converged.CLAIMS)
    assert set(table["page"]) == {"p3_converged"} and table["scale"].str.contains("seeds per method").all()
    verdicts = dict(zip(table["claim"], table["verdict"]))
    sts = [v for c, v in verdicts.items() if "[STS" in c]
    assert sorted(sts) == ["contradicted", "supported"]  # above compression only, below the baseline
    # two retrieval tasks are testable through the runs (3 per method): the same directions
    assert sorted(v for c, v in verdicts.items() if "[Retrieval" in c) == ["contradicted", "supported"]


def test_the_leaderboard_ranks_complete_methods_and_tests_every_pair_with_holm():
    from repro.core.tasks import TASKS
    from repro.crosspaper.leaderboard import compact_view, missing_rows, ranked
    from repro.verdicts.ranking import all_pairs, friedman

    rng = np.random.default_rng(2)
    base = rng.uniform(30, 70, len(TASKS))
    rows = []
    for method, shift in (("strong", 8.0), ("close", 7.9), ("weak", 0.0)):
        rows += [{"method": method, "task": t, "category": TASKS[t].category,
                  "score": b + shift + rng.normal(0, 0.05)} for t, b in zip(TASKS, base)]
    rows += [{"method": "partial", "task": t, "category": TASKS[t].category, "score": 99.0} for t in list(TASKS)[:5]]
    scores = pd.DataFrame(rows)
    table = ranked(scores)
    assert list(table.index) == ["strong", "close", "weak"]  # the 5-task method is not ranked with them
    assert table["rank"].tolist() == [1, 2, 3] and (table["tasks"] == len(TASKS)).all()
    # 0.1 points apart: 19 tasks of a Wilcoxon see it, but it is below nothing else; both are far above weak
    assert table.loc["strong", "above (Holm)"].endswith("3") and table.loc["weak", "above (Holm)"] == "-"
    assert table.loc["weak", "not separated from"] == "-"
    assert table.loc["strong", "STS"] == pytest.approx(scores[(scores.method == "strong")
                                                              & (scores.category == "STS")]["score"].mean())
    missing = missing_rows(scores, ["strong", "partial", "never run"])
    assert missing.set_index("method")["missing"].to_dict() == {"partial": len(TASKS) - 5, "never run": len(TASKS)}
    view = compact_view(table)  # the page's narrow form: indexed by rank, short headers, same values
    assert "Class." in view and view.loc[1, "method"] == "strong" and view.loc[1, "mean"] == table.loc["strong", "mean"]
    assert friedman(scores, list(table.index))["p"] < 0.001
    # trained methods: the runs are the units. Two designs 3 points apart on every task, but their 3 runs
    # scatter by 4 points: not separated, whatever the 19 tasks say; a training-free row is tested against runs
    runs = pd.DataFrame([{"method": m, "seed": s, "task": t, "category": TASKS[t].category,
                          "score": b + shift + 4 * (s - 1) + rng.normal(0, 0.05)}
                         for m, shift in (("design A", 3.0), ("design B", 0.0)) for s in range(3)
                         for t, b in zip(TASKS, base)]
                        + [{"method": "free", "seed": np.nan, "task": t, "category": TASKS[t].category,
                            "score": b - 20} for t, b in zip(TASKS, base)])
    averaged = runs.groupby(["method", "task", "category"], as_index=False)["score"].mean()
    pairs = all_pairs(runs, ["design A", "design B", "free"]).set_index(["first", "second"])
    assert pairs.loc[("design A", "design B"), "outcome"] == "not separated"
    assert pairs.loc[("design A", "free"), "units"] == "3 runs vs one fixed model"
    assert ranked(averaged, runs=runs).loc["design A", "not separated from"] == "2"
    one = runs[(runs.seed != 1) & (runs.seed != 2)]  # one run each: no test between the designs
    assert all_pairs(one, ["design A", "design B"]).iloc[0]["outcome"] == "untested (one training run)"


def test_the_side_by_side_pages_render_from_an_empty_store(tmp_path, monkeypatch):
    from repro.book import cost
    from repro.crosspaper import leaderboard, leaderboard_costs

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    scores, rows = leaderboard.leaderboard_scores()
    assert scores.empty and rows.at["p1-model1", "label"] == "Paper 1 model 1 (converged, 0 seeds)"
    assert leaderboard.ranked(scores).empty and leaderboard_costs.training_hours().empty
    assert leaderboard_costs.dimensions(scores).empty
    assert len(leaderboard.missing_rows(scores, rows)) == len(rows)
    costs = cost.stored_costs()
    assert costs.empty and cost.per_experiment(costs).empty and cost.per_run(costs).empty
    cost.machines(costs)


def test_the_leaderboard_shows_paper3_under_the_budget_rule_once_stored_in_place_of_the_tables_rows(monkeypatch):
    from dataclasses import replace

    from repro.autoregembed.experiments import converged as p3
    from repro.autoregembed.experiments.baselines import contrastive_config
    from repro.core.tasks import TASKS
    from repro.crosspaper import encode_rates, leaderboard
    from repro.crosspaper import leaderboard_paper3 as lb3

    base = p3.base_config("smollm2-135m")
    fixed = lb3.tables_labels("smollm2-135m")
    assert fixed["p3-align"].startswith("AutoRegEmbed (Paper 3) at the Tables 1-2 configuration (150 stage-2")
    autoreg = replace(base, lr=2e-6)
    baseline = replace(contrastive_config("last token, in-batch + hard negative", base, lr=2e-4), temperature=0.02)
    earlier = {key: (leaderboard.Row(key, key, "3"),
                     pd.DataFrame({"method": key, "task": list(TASKS), "category": "STS", "score": 1.0}))
               for key in [*fixed, *[lb3.baseline_id(n) for n in lb3.CONTRASTIVE]]}
    monkeypatch.setattr(lb3, "_paper3_tables", lambda backbone, keys=None: {k: v for k, v in earlier.items()
                                                                         if keys is None or k in keys})
    assert lb3.paper3_leaderboard("smollm2-135m") == earlier  # nothing under the budget rule yet: the Tables 1-2 rows
    monkeypatch.setattr(p3, "selected_configs", lambda b: {p3.AUTOREG: autoreg, p3.BASELINE: baseline})
    rows = [{"model": model, "seed": seed, "task": t, "category": TASKS[t].category, "score": score + seed}
            for model, seeds, score in ((p3.AUTOREG, (0, 1, 2), 50.0), (p3.COMPRESSION, (0, 1, 2), 40.0),
                                        (p3.BASELINE, (0, 1), 60.0))
            for seed in seeds for t in TASKS]
    monkeypatch.setattr(p3, "final_scores", lambda b, seeds, suite, tasks, **k: (pd.DataFrame(rows), {}))
    rows_now = lb3.paper3_leaderboard("smollm2-135m")
    assert sorted(rows_now) == ["p3-align@budget", "p3-baseline@budget", "p3-compress@budget"]
    assert {key: row.label for key, (row, _) in rows_now.items()} == {
        "p3-align@budget": "AutoRegEmbed (Paper 3) under the budget rule, lr 2e-06, logprob, 3 seeds",
        "p3-compress@budget": f"compression only (Paper 3) under the budget rule ({lb3.SHARED_STAGE1})",
        "p3-baseline@budget": "last token, in-batch + hard negative (Paper 3 baseline) under the budget rule, "
                              "lr 0.0002, tau 0.02, 2 seeds"}
    means = {key: frame["score"].mean() for key, (_, frame) in rows_now.items()}
    assert means["p3-align@budget"] == pytest.approx(51.0) and means["p3-baseline@budget"] == pytest.approx(60.5)
    # each row names the encode rate that times it, and the command that computes a missing task
    assert {key: row.rate for key, (row, _) in rows_now.items()} == {
        "p3-align@budget": "p3-align", "p3-compress@budget": "p3-compress",
        "p3-baseline@budget": "p3-last token, in-batch + hard negative"}
    assert all(row.rate in encode_rates.LABELS for row, _ in rows_now.values())
    table = leaderboard.row_table({key: row for key, (row, _) in rows_now.items()})
    missing = leaderboard.missing_rows(pd.DataFrame(columns=["method", "task", "category", "score"]), table)
    assert missing["computed by"].str.startswith("scripts/p3_converged.sh").all()
    # dev kept stage 1 in every AutoRegEmbed run: one merged row (compression only's), and the superseded Tables 1-2
    # AutoRegEmbed leaves the leaderboard (it is never plotted as "AutoRegEmbed")
    same = [r | {"score": 40.0} if r["model"] in (p3.AUTOREG, p3.COMPRESSION) else r for r in rows]
    monkeypatch.setattr(p3, "final_scores", lambda b, seeds, suite, tasks, **k: (pd.DataFrame(same), {}))
    assert sorted(lb3.paper3_leaderboard("smollm2-135m")) == ["p3-baseline@budget", "p3-compress@budget"]
    # AutoRegEmbed stored without its compression only (e.g. a stage 1 retrained since): that row stays as it was
    monkeypatch.setattr(p3, "final_scores", lambda b, seeds, suite, tasks, **k: (
        pd.DataFrame([r for r in rows if r["model"] != p3.COMPRESSION]), {}))
    assert "p3-compress" in lb3.paper3_leaderboard("smollm2-135m")
    # a LoRA selection is named apart, and no encode rate of the fully fine-tuned encoder is read for it
    lora_run = replace(autoreg, finetune="lora", compress=replace(autoreg.compress, finetune="lora"))
    monkeypatch.setattr(p3, "selected_configs", lambda b: {p3.AUTOREG: lora_run,
                                                           p3.BASELINE: baseline})
    lora = lb3.paper3_budget_rows("smollm2-135m", {p3.AUTOREG: 3})
    assert lora[p3.AUTOREG].label.startswith("AutoRegEmbed, LoRA (Paper 3) under the budget rule")
    assert lora[p3.AUTOREG].rate is None and lora[p3.COMPRESSION].rate is None
    monkeypatch.setattr(p3, "selected_configs", lambda b: {p3.AUTOREG: autoreg, p3.BASELINE: baseline})
    # only the baseline stored: AutoRegEmbed and compression only stay the Tables 1-2 rows
    monkeypatch.setattr(p3, "final_scores", lambda b, seeds, suite, tasks, **k: (
        pd.DataFrame([r for r in rows if r["model"] == p3.BASELINE]), {}))
    kept = lb3.paper3_leaderboard("smollm2-135m")
    assert set(fixed) <= set(kept)
    assert not any(key in kept for key in earlier if key not in fixed) and len(kept) == 3
    # their training hours: mean wall hours over the seeds behind the row's scores (a run whose scores are not
    # all stored is left out; no stage-1 record is stored here, so nothing is added for it), under the row's id
    monkeypatch.setattr(p3, "final_scores", lambda b, seeds, suite, tasks, **k: (pd.DataFrame(rows), {}))
    runs = pd.DataFrame({"method": [p3.AUTOREG, p3.AUTOREG, p3.BASELINE, p3.BASELINE], "seed": [0, 1, 0, 2],
                         "wall hours (run: steps + dev evaluations)": [1.0, 2.0, 0.5, 9.0]})
    monkeypatch.setattr(p3, "run_table", lambda b, seeds=p3.SEEDS: runs)
    hours = lb3.paper3_budget_hours("smollm2-135m")
    assert hours == {"p3-align@budget": 1.5, "p3-baseline@budget": 0.5}


def test_the_leaderboard_shows_the_independent_chains_once_one_is_scored_on_every_task(monkeypatch):
    from repro.autoregembed.experiments import converged as p3
    from repro.autoregembed.experiments import independent
    from repro.core.tasks import TASKS
    from repro.crosspaper import leaderboard
    from repro.crosspaper import leaderboard_paper3 as lb3

    budget = {key: (leaderboard.Row(key, key, "3"), pd.DataFrame({"method": key, "task": list(TASKS),
                                                                   "category": "STS", "score": 1.0}))
              for key in ("p3-compress@budget", "p3-align@budget", "p3-baseline@budget")}
    tables = {key: budget["p3-compress@budget"] for key in ("p3-compress", "p3-align", "p3-last token, in-batch")}
    monkeypatch.setattr(lb3, "_paper3_budget_rule", lambda backbone, sides=None: dict(budget))
    monkeypatch.setattr(lb3, "_paper3_tables", lambda backbone, keys=None: {k: v for k, v in tables.items()
                                                                         if keys is None or k in keys})

    def scored(seeds_all, seeds_page, adopted):
        rows = []
        for seed in (*seeds_all, *seeds_page):
            tasks = list(TASKS) if seed in seeds_all else list(p3.TASKS)
            for model, score in ((p3.COMPRESSION, 40.0), (p3.AUTOREG, 45.0 if adopted else 40.0)):
                rows += [{"model": model, "seed": seed, "unit": f"stage 1 {seed}", "task": t,
                          "category": TASKS[t].category, "score": score + seed} for t in tasks]
        frame = pd.DataFrame(rows)

        def final_scores(seeds, backbone, suite, tasks):  # a seed with a task missing is left out
            have = frame.groupby(["model", "seed"])["task"].apply(set)
            keep = [(m, s) for (m, s), found in have.items() if set(tasks) <= found]
            kept = pd.Series([(m, s) in keep for m, s in zip(frame.model, frame.seed)], index=frame.index)
            part = frame[kept & frame.task.isin(tasks)]
            return part.reset_index(drop=True), {}
        return final_scores

    monkeypatch.setattr(independent, "final_scores", scored((), (0, 1), True))
    assert lb3.paper3_leaderboard("smollm2-135m").keys() == budget.keys()  # no chain on every task: as before
    monkeypatch.setattr(independent, "final_scores", scored((2,), (0, 1), True))
    rows = lb3.paper3_leaderboard("smollm2-135m")
    # the chains replace every earlier compression only and AutoRegEmbed; the budget rule's baseline (independent
    # seeds) stays, and replaces the Tables 1-2 baselines as before
    assert sorted(rows) == ["p3-align@chains", "p3-baseline@budget", "p3-compress@chains"]
    label = rows["p3-align@chains"][0].label
    assert label == ("AutoRegEmbed (Paper 3), independent chains (one stage 1 per seed, under the budget rule and the "
                     "principled template), 1 seed (2); seeds 0, 1 scored on STS and retrieval only (weights gone)")
    assert rows["p3-align@chains"][1]["score"].mean() == 47.0 and len(rows["p3-align@chains"][1]) == len(TASKS)
    assert rows["p3-compress@chains"][0].rate == "p3-compress" and rows["p3-align@chains"][0].rate == "p3-align"
    # no chain's stage 2 adopted: one row, which says so
    monkeypatch.setattr(independent, "final_scores", scored((1, 2), (0,), False))
    rows = lb3.paper3_leaderboard("smollm2-135m")
    assert "p3-align@chains" not in rows and "p3-align@budget" not in rows and "p3-align" not in rows
    assert rows["p3-compress@chains"][0].label.endswith(
        "2 seeds (1, 2); seed 0 scored on STS and retrieval only (weights gone); = AutoRegEmbed: dev rejected stage 2 "
        "in every chain, so the two are one model")

    # their hours: stage 1 (steps + evaluations) for compression only, both stages for AutoRegEmbed, mean over seeds
    def record(train, evals):
        return {"summary": {"train_seconds": train, "eval_seconds": evals}}
    chains = {1: {"stage1": record(3600.0, 1800.0), "stage2": record(360.0, 0.0)},
              2: {"stage1": record(7200.0, 0.0), "stage2": record(1440.0, 0.0)}}
    monkeypatch.setattr(independent, "stored_chain", lambda seed, backbone: chains[seed])
    assert lb3.chain_hours("smollm2-135m") == {"p3-compress@chains": pytest.approx(1.75),
                                               "p3-align@chains": pytest.approx(2.0)}


def test_leaderboard_cost_columns_and_missing_commands():
    from repro.crosspaper import leaderboard, leaderboard_costs
    from repro.crosspaper.leaderboard import Row

    hours = pd.Series({"p1-model1": 0.8, "Paper 1 model 4 (converged, 1 seed)": 9.0})  # a label is no key
    rows = leaderboard.row_table({
        "prompteol+edge/2": Row("PromptEOL + EmbedFilter edge/2", "PromptEOL + EF", "2", training_free=True),
        "p1-model1": Row("Paper 1 model 1 (converged, 3 seeds)", "P1 model 1", "1"),
        "minilm": Row("all-MiniLM-L6-v2 (reference)", "MiniLM (reference)", "reference"),
        "p1-model4": Row("Paper 1 model 4 (converged, 1 seed)", "P1 model 4", "1")})
    column = leaderboard_costs.hours_column(rows.index, hours, rows)
    assert column.iloc[0] == 0.0 and column.iloc[1] == 0.8  # training-free 0, trained from its record
    assert column.iloc[2:].isna().all()  # the reference (trained elsewhere) and a trained row without a record
    p1 = leaderboard.row_table({"p1-model2": Row("Paper 1 model 2 (converged, 0 seeds)", "P1 model 2", "1"),
                                "p3-align": Row("AutoRegEmbed (Paper 3) x", "AutoRegEmbed", "3", "the stage-2 command")})
    missing = leaderboard.missing_rows(pd.DataFrame(columns=["method", "task", "category", "score"]), p1)
    assert list(missing["computed by"]) == ["scripts/p1_converged.sh 2:0 2:1 2:2 2:3 2:4", "the stage-2 command"]
    assert list(missing["method"]) == list(p1["label"])  # the page shows labels
    assert "estimated hours" not in missing  # no measured run cost given: no estimate
    costed = leaderboard.missing_rows(pd.DataFrame(columns=["method", "task", "category", "score"]), p1, 1.5)
    assert costed["estimated hours"].iloc[0] == 7.5 and np.isnan(costed["estimated hours"].iloc[1])  # 5 runs x 1.5 h
    full = pd.DataFrame([{"method": "p1-model2", "task": t, "category": "STS", "score": 1.0}
                         for t in leaderboard.TASKS])
    nothing = leaderboard.missing_rows(full, p1.loc[["p1-model2"]], 1.5)
    assert nothing.empty and "method" in nothing and "estimated hours" in nothing  # the page can index it
    view = leaderboard.compact_view(pd.DataFrame({"mean": [1.0], "rank": [1]}, index=["p1-model1"]), rows)
    assert view.loc[1, "method"] == "Paper 1 model 1 (converged, 3 seeds)"


def test_paper1_run_hours_adds_scoring_to_the_run(tmp_path, monkeypatch):
    from repro.crosspaper import leaderboard_costs as costs

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    assert costs.paper1_run_hours() is None  # nothing stored: no estimate
    frame = pd.DataFrame([{"model": 1, "seed": 0, "task": t, "category": "STS", "score": 1.0} for t in ("A", "B")])
    records = {(1, 0, t): {"timings": {"task_seconds": 1800.0}, "rows": []} for t in ("A", "B")}
    runs = pd.DataFrame([{"model": 1, "seed": 0, "wall hours (run: steps + dev evaluations)": 0.5}])
    monkeypatch.setattr(costs, "TASKS", {"A": None, "B": None})
    monkeypatch.setattr(costs, "converged_scores", lambda *a, **k: (frame, records))
    monkeypatch.setattr(costs, "run_table", lambda *a, **k: runs)
    assert costs.paper1_run_hours() == pytest.approx(1.5)  # 0.5 h of run + 2 x 0.5 h of scoring


def test_paper1_training_hours_count_only_the_scored_seeds(tmp_path, monkeypatch):
    from repro.crosspaper import leaderboard_costs as costs

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    wall = "wall hours (run: steps + dev evaluations)"
    runs = pd.DataFrame([{"model": 3, "seed": 0, wall: 1.0}, {"model": 3, "seed": 1, wall: 3.0}])
    scored = pd.DataFrame([{"model": 3, "seed": 0, "task": "STS12", "category": "STS", "score": 50.0}])
    monkeypatch.setattr(costs, "run_table", lambda *a, **k: runs)
    monkeypatch.setattr(costs, "converged_scores", lambda *a, **k: (scored, {}))
    hours = pd.Series(costs.paper1_hours())
    # seed 1 trained but its scoring is incomplete: the row is "1 seed" and its hours are seed 0's alone
    assert hours.to_dict() == {"p1-model3": 1.0}


def test_claims_view_gives_one_narrow_table_per_statement_in_order():
    from repro.book.notebook import claims_view

    rng = np.random.default_rng(4)
    base = rng.uniform(40, 60, 8)
    wide = scores({1: base, 4: base + 1 + rng.uniform(0, 1, 8), 5: base + 5 + rng.uniform(0, 1, 8)})
    claims = with_adjusted_p(claims_table(wide, [("z first", 5, 1, "STS", "better"), ("a second", 4, 1, "STS", "better"),
                                                 ("z first", 5, 4, "STS", "better")]))
    view = claims_view(claims)
    assert [s for s, _ in view] == ["z first", "a second"]  # the page's order, not sorted
    # the verdict first after the row label, so it shows without scrolling
    assert list(view[0][1].columns) == ["verdict", "tasks", "units", "difference", "90% CI", "p", "BH"]
    assert view[0][1].index.tolist() == ["5 vs 1", "5 vs 4"] and view[1][1]["verdict"].tolist() == ["supported"]
    # rows are labelled by what tells them apart (never two rows with one label); what they share is said above
    paged = claims_view(claims.assign(page=["Tables", "curve", "Tables"]))  # one page per statement here
    assert paged[0][1].index.tolist() == ["5 vs 1", "5 vs 4"] and paged[0][1].columns[0] == "verdict"
    mixed = claims_view(claims.assign(page=["Tables", "curve", "curve"]))  # a summary page's concatenated claims
    assert mixed[0][1].index.tolist() == ["Tables, 5 vs 1", "curve, 5 vs 4"]
    sizes = claims.assign(comparison="a vs b", category=["64", "x", "128"])  # one comparison at several sizes
    assert claims_view(sizes)[0][1].index.tolist() == ["64", "128"]
    seeded = claims.assign(**{"seed spread": [0.5, np.nan, 0.4]})
    assert [list(t.columns[-2:]) for _, t in claims_view(seeded)] == [["BH", "spread"], ["p", "BH"]]


def test_show_claims_says_what_rows_share_once_and_shows_narrow_tables(monkeypatch, capsys):
    from repro.book import notebook

    rng = np.random.default_rng(4)
    base = rng.uniform(40, 60, 8)
    wide = scores({1: base, 4: base + 1 + rng.uniform(0, 1, 8), 5: base + 5 + rng.uniform(0, 1, 8)})
    claims = with_adjusted_p(claims_table(wide, [("z first", 5, 1, "STS", "better"), ("z first", 5, 4, "STS", "better")]))
    shown = []
    monkeypatch.setattr(notebook, "display", shown.append)
    notebook.show_claims(claims, detail=True)
    line, table, detail = shown
    assert "z first" in line.data and "category: STS" in line.data and "test: " in line.data
    assert "units" not in table.columns and table.index.tolist() == ["5 vs 1", "5 vs 4"]  # units said above
    assert list(detail.columns[:2]) == ["mean first", "mean second"] and detail.index.tolist() == ["5 vs 1", "5 vs 4"]
    shown.clear()
    notebook.show_claims(claims.iloc[:0])
    assert shown == [] and "no claim" in capsys.readouterr().out


def test_paper2_rows_count_the_current_scope_and_keep_the_earlier_one_as_history(monkeypatch):
    """The main table's current scope (official tokenization, every task) gives current rows; the earlier scope
    (piece-wise, the STS sets) gives history rows; each reads the sweep of its own tokenization and tasks."""
    from repro.core.tasks import TASKS
    from repro.crosspaper import ledger_paper2

    calls = []

    def sweep(runs, suite, tasks, variants, recompute=False, tokenization="pieces", protocol="mteb"):
        calls.append((tuple(runs), tuple(tasks or ()), tokenization, protocol))
        names = list(tasks or TASKS)
        rng = np.random.default_rng(len(names))
        base = {t: 50 + rng.normal(0, 5) for t in names}  # a task effect shared by the variants
        gain = {t: (3.0 if tokenization == "official" else -3.0) + rng.normal(0, 0.3) for t in names}  # a loss before
        return pd.DataFrame([{"backbone": b, "prompt": p, "task": t, "category": TASKS[t].category,
                              "variant": v, "dims": 8, "main_score": (base[t] + gain[t] * (v == "edge/2")) / 100}
                             for b, p in runs for t in names for v in variants])

    monkeypatch.setattr(ledger_paper2, "sweep_scores", sweep)
    params = {"profile": "x", "backbones": ["a"], "prompts": ["prompteol", "echo"], "skip_runs": ["a:echo"],
              "suite": "compact", "tasks": None, "tokenization": "official", "ratios": [1, 2, 4, 8],
              "earlier_tokenization": "pieces", "earlier_tasks": ["STS12", "STS13", "STS14", "STS15", "STS16", "STS17"]}
    scopes = ledger_paper2._scopes(params)
    assert [current for _, current in scopes] == [True, False]
    assert scopes[1][0]["skip_runs"] == [] and scopes[1][0]["tokenization"] == "pieces"
    now = ledger_paper2.main_table_rows(scopes[0][0], True)
    before = ledger_paper2.main_table_rows(scopes[1][0], False)
    assert calls == [((("a", "prompteol"),), (), "official", "mteb"),
                     ((("a", "prompteol"), ("a", "echo")), tuple(params["earlier_tasks"]), "pieces", "mteb")]
    improves = now[now["claim"].str.startswith(ledger_paper2.EDGE_IMPROVES)]
    assert improves["verdict"].tolist() == ["supported"] and improves["current"].all()
    assert "official tokenization" in improves["scale"].iloc[0] and "19 tasks" in improves["scale"].iloc[0]
    per_category = now[now["claim"].str.startswith(ledger_paper2.EDGE_PER_CATEGORY)]
    assert len(per_category) == len({TASKS[t].category for t in TASKS})  # every category of the suite, one row each
    assert per_category["tier"].eq("ablation").all()
    earlier = before[before["claim"].str.startswith(ledger_paper2.EDGE_IMPROVES)]
    assert not earlier["current"].any() and set(earlier["verdict"]) == {"contradicted"}
    assert before[before["claim"].str.startswith(ledger_paper2.EDGE_PER_CATEGORY)].empty  # one category: no split


def test_the_best_layer_test_counts_the_choice_of_the_best_layer():
    from repro.core.stats import wilcoxon_over_tasks
    from repro.pooling_attention.claims import best_layer_test, best_vs_last_layer

    rng = np.random.default_rng(0)
    runs, picked, tested = 150, 0, 0
    for _ in range(runs):  # 12 layers of noise around one mean (each its own spread) on 19 tasks
        wide = pd.DataFrame(rng.normal(50, 10, (19, 1)) + rng.normal(0, 1, (19, 12)) * rng.uniform(0.2, 3, 12))
        picked += wilcoxon_over_tasks(wide[wide.mean().idxmax()], wide[11])["p"] < 0.05  # picked on the tested tasks
        tested += best_layer_test(wide, 11, n_resamples=1000, seed=int(rng.integers(10**9)))["p"] < 0.05
    assert picked / runs > 0.1 and tested / runs <= 0.08  # the naive test's false positives; this one's level
    wide = pd.DataFrame(rng.normal(50, 10, (19, 1)) + rng.normal(0, 1, (19, 12)))
    wide[4] += 1.5  # one layer truly better by 1.5 SD
    assert best_layer_test(wide, 11)["p"] < 0.01
    assert best_layer_test(wide.iloc[:4], 11)["verdict"].startswith("untestable at n=4 tasks")
    noise = pd.DataFrame(rng.normal(50, 10, (19, 1)) + rng.normal(0, 1, (19, 6)))
    noise[2] = noise[5]  # a layer equal to the last on every task has t = 0, not NaN
    assert best_layer_test(noise, 5)["p"] > 0.01
    noise.iloc[3, 5] = np.nan  # a task without the last layer's score is left out, not a NaN gain
    assert best_layer_test(noise, 5)["tasks"] == 18 and np.isfinite(best_layer_test(noise, 5)["p"])
    mixed = pd.DataFrame({"last": rng.normal(50, 10, 19)})
    mixed["big, noisy"], mixed["small, steady"] = mixed["last"] + 5 + rng.normal(0, 12, 19), mixed["last"] + 0.3
    mixed["small, steady"] += rng.normal(0, 0.04, 19)
    tested = best_layer_test(mixed, "last")  # the p is about the layer with the largest t, and so is the gain
    assert tested["layer"] == "small, steady" and tested["difference"] == pytest.approx(0.3, abs=0.05)
    long = wide.stack().rename("score").rename_axis(["task", "layer"]).reset_index()
    table = best_vs_last_layer(long.assign(backbone="b", category="STS", pooling="last"), n_resamples=1000)
    row = table[table.category == "all tasks"].iloc[0]
    assert row["best layer"] == 4 and row["p (max over layers)"] < 0.01 and row["verdict"] == "significant: first better"


def test_a_ledger_statistic_without_a_p_has_no_dangling_comma():
    from repro.crosspaper.ledger_schema import from_claims

    claims = pd.DataFrame({"statement": ["c", "d"], "category": ["STS", "STS"], "difference": [1.0, 2.0],
                           "p": [np.nan, 0.01], "units": ["1 task", "9 tasks"],
                           "verdict": ["untestable at n=1", "supported"]})
    assert from_claims(1, claims, "s", "p")["statistic"].tolist() == ["1 task", "p = 0.010, 9 tasks"]


def test_a_statement_of_existence_is_decided_by_its_smallest_adjusted_p():
    from repro.crosspaper.ledger_paper1 import LAST_LAYER
    from repro.crosspaper.statements import statements

    rows = pd.DataFrame({"paper": "P1", "claim": [f"{LAST_LAYER} [a]", f"{LAST_LAYER} [b]", "x [a]", "x [b]"],
                         "tier": "headline", "difference": [6.0, 0.5, 2.0, 1.5], "paper (quoted)": "-",
                         "p (BH)": [0.001, 0.5, 0.01, 0.03], "page": "p",
                         "verdict": ["supported", "inconclusive", "supported", "supported"]})
    table = statements(rows).set_index("statement")
    assert table.loc[LAST_LAYER, ["verdict", "deciding p (BH)"]].tolist() == ["supported", 0.001]
    assert table.loc["x", ["verdict", "deciding p (BH)"]].tolist() == ["supported", 0.03]
    mixed = rows.assign(claim=["y [a]", "y [b]", "y [c]", "y [d]"], verdict=["contradicted", "inconclusive",
                                                                            "contradicted", "supported"])
    assert statements(mixed).set_index("statement").loc["y", "deciding p (BH)"] == 0.001  # the surest contradiction


def test_the_ledger_counts_a_test_two_statements_read_once_in_its_family():
    """Issue 53's bug: the ledger keyed its BH de-duplication on the claim text, so two statements reading one test
    ("a better than b" and "b no gain over a", the same p and |difference| at the same scale) counted twice."""
    from scipy.stats import false_discovery_control

    from repro.crosspaper.ledger import adjusted

    def row(claim, ours, p, expected="better"):
        return {"paper": "P", "claim": claim, "tier": "headline", "scale": "s1", "difference": ours, "paper (quoted)": "",
                "test": "t", "statistic": 5, "expected": expected, "p": p, "margin side": "", "verdict": "supported",
                "page": "p", "current": True, "margin": 1.0}

    rows = pd.DataFrame([row("model 5 beats model 1 [STS, 5 vs 1]", 3.0, 0.01),
                         row("model 1 brings no gain over model 5 [STS, 1 vs 5]", -3.0, 0.01, "no gain"),
                         row("model 2 beats model 1 [STS, 2 vs 1]", 2.0, 0.04)])
    out = adjusted(rows)["p (BH)"].to_numpy()
    np.testing.assert_allclose(out, [0.02, 0.02, 0.04])  # a family of two tests, not three
    assert not np.allclose(out, false_discovery_control([0.01, 0.01, 0.04]))


def test_the_summary_headline_table_reads_the_current_runs_of_trained_methods():
    from repro.autoregembed.claims import current_wide

    index = pd.MultiIndex.from_tuples([("STS", "STS12"), ("Retrieval", "SciFact")], names=["category", "task"])
    wide = pd.DataFrame({"last token": [40.0, 10.0], "last token, in-batch": [60.0, 30.0],
                         "compression only": [49.0, 20.0], "AutoRegEmbed": [49.5, 21.0]}, index=index)
    rule = pd.DataFrame([{"model": m, "seed": s, "category": c, "task": t, "score": v + s}
                         for m, v in (("AutoRegEmbed", 54.0), ("compression only", 54.0),
                                      ("best contrastive baseline", 70.0))
                         for s in (0, 1, 2) for c, t in index])
    now = current_wide(wide, rule)
    assert sorted(now.columns) == ["AutoRegEmbed", "best contrastive baseline", "compression only", "last token"]
    assert now.loc[("STS", "STS12"), "AutoRegEmbed"] == 55.0 and now.loc[("STS", "STS12"), "last token"] == 40.0
    assert current_wide(wide, rule.iloc[:0]).equals(wide)  # nothing under the rule yet: the page's runs


def test_the_leaderboards_paper3_rows_read_only_current_runs(tmp_path, monkeypatch):
    """Current views read current runs only: once the independent chains are stored (as in the committed store),
    the leaderboard's Paper 3 rows read no superseded run at all (the read log of the result store), neither the
    Tables 1-2 page's fixed-length runs nor the budget-rule AutoRegEmbed whose seeds share one stage 1: every
    AutoRegEmbed result read is a chain's (stage 1 under the rule, the principled template) and every contrastive one
    is under the budget rule."""
    import json

    from repro.autoregembed.experiments import independent
    from repro.crosspaper.leaderboard_paper3 import CHAIN_IDS, paper3_leaderboard
    from repro.store.paths import REPO_ROOT
    from repro.store.results import READ_LOG_ENV

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(REPO_ROOT / "results"))
    monkeypatch.setenv(READ_LOG_ENV, str(tmp_path / "reads"))
    rows = paper3_leaderboard("smollm2-135m")
    assert set(CHAIN_IDS.values()) & set(rows)  # the committed store holds the chains
    reads = set((tmp_path / "reads").read_text().split())
    checked = 0
    for line in reads:
        experiment, stem = line.split("/")
        params = json.loads((REPO_ROOT / "results" / experiment / f"{stem}.json").read_text())["params"]
        if experiment in ("autoreg_runs", "autoreg_scores"):
            config = params["config"]
            stage1 = config.get("compress") or config
            assert stage1.get("stopping") == "dev", line  # stage 1 under the budget rule (the chains')
            assert {k: stage1[k] for k in independent.PRINCIPLED} == independent.PRINCIPLED, line
            checked += 1
        elif experiment in ("trained_runs", "trained_scores"):
            assert params["train"].get("stopping") == "dev", line  # the budget rule's baseline, not the Tables page's
            checked += 1
    assert checked > 50


def test_the_intros_statements_link_no_page_of_superseded_runs(committed_comparisons):
    """Current views read current runs only: on the committed store, every statement the intro shows comes from the
    ledger's current rows, and the pages it links are the pages of those rows, never a page of the book's appendix of
    superseded runs (its table of contents), nor a page whose rows of that statement are all superseded."""
    import yaml

    from repro.book.build import BOOK_DIR
    from repro.crosspaper.ledger import current
    from repro.crosspaper.statements import statement_of, statements

    rows = committed_comparisons.assign(statement=lambda f: f["claim"].map(statement_of))
    assert (~rows["current"].astype(bool)).any()  # the store holds superseded runs: the check means something
    toc = yaml.safe_load((BOOK_DIR / "_toc.yml").read_text())
    appendix = {c["file"] for part in toc["parts"] if "superseded" in part["caption"] for c in part["chapters"]}
    assert appendix
    shown = statements(current(rows.drop(columns="statement")))  # claims_ledger's rows
    for statement, pages in zip(shown["statement"], shown["pages"]):
        linked = set(pages.split(", "))
        of = rows[rows["statement"] == statement]
        current_pages = set(of.loc[of["current"].astype(bool), "page"])
        assert linked <= current_pages, statement
        assert not linked & appendix, statement
