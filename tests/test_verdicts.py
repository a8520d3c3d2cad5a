"""The verdict engine: runs as units, equivalence against the declared margin, one verdict per statement, and its
error rates checked by simulation (calibration under no difference, power at twice the margin)."""

import numpy as np
import pandas as pd
import pytest

from repro.verdicts.calibration import simulate_runs, simulated_rates
from repro.verdicts.rule import (
    BELOW_MARGIN,
    CONTRADICTED,
    INCONCLUSIVE,
    MARGIN,
    ONE_RUN,
    SAME_MODEL,
    SUPPORTED,
    adjusted_verdict,
    claim_p,
    decide,
    runs_test,
    statement_verdict,
    tasks_test,
)
from repro.verdicts.run_units import run_comparison


@pytest.mark.parametrize("runs,tasks", [(3, 9), (3, 19), (5, 9), (5, 19)])
@pytest.mark.parametrize("run_sd,residual_sd", [(1.0, 0.5), (3.0, 2.0)])
def test_the_engine_is_calibrated_under_no_difference(runs, tasks, run_sd, residual_sd):
    """Simulated null data with variance components like the measured ones: a gain claim is decided (supported or
    contradicted) in at most 6% of simulations at alpha 0.05, and a no-difference claim whose true difference is
    exactly the margin (its worst case) is supported in at most 6%."""
    k = {"n_runs": runs, "n_tasks": tasks, "run_sd": run_sd, "residual_sd": residual_sd, "seed": runs * 100 + tasks}
    assert simulated_rates(600, effect=0.0, expected="better", **k)["decided"] <= 0.06
    assert simulated_rates(600, effect=MARGIN, expected="equal", **k)["supported"] <= 0.06
    assert simulated_rates(600, effect=MARGIN, expected="no gain", **k)["supported"] <= 0.06


def test_the_engine_has_power_at_twice_the_margin_with_five_runs():
    """A true difference of 2 x margin is supported in at least half the simulations at 5 runs x 19 tasks (run SD
    1, residual SD 0.5: model 1's measured order); with 3 runs it is not, which the ledger page reports."""
    five = simulated_rates(600, 5, 19, 2 * MARGIN, "better", run_sd=1.0, residual_sd=0.5, seed=7)
    three = simulated_rates(600, 3, 19, 2 * MARGIN, "better", run_sd=1.0, residual_sd=0.5, seed=7)
    assert five["supported"] >= 0.5 and three["supported"] < five["supported"]


def test_the_old_rule_on_seed_averaged_scores_was_anti_conservative_and_runs_as_units_are_not():
    """The reason for the engine: a run effect moves every task of a run together. A Wilcoxon over tasks on
    seed-averaged scores calls such null comparisons significant far above 5%; the per-run test does not, and the
    engine's path through a long frame (:func:`run_comparison`) gives the same test."""
    from scipy import stats

    rng = np.random.default_rng(3)
    old, new = 0, 0
    for _ in range(1000):
        tasks = rng.normal(60, 10, 9)
        a, b = (tasks + rng.normal(0, 2.0, (3, 1)) + rng.normal(0, 0.5, (3, 9)) for _ in range(2))
        old += stats.wilcoxon(a.mean(axis=0), b.mean(axis=0)).pvalue < 0.05
        new += decide(runs_test(a.mean(axis=1), b.mean(axis=1)), "better") in (SUPPORTED, CONTRADICTED)
    assert old / 1000 > 0.15 and new / 1000 <= 0.06
    frame = simulate_runs(3, 9, 0.0, run_sd=2.0, residual_sd=0.5, rng=rng)
    means = frame.groupby(["model", "seed"])["score"].mean()
    direct = runs_test(means.loc["a"].to_numpy(), means.loc["b"].to_numpy())
    assert run_comparison(frame, "a", "b")["p (difference)"] == pytest.approx(direct["p (difference)"])


def test_runs_test_decides_gains_by_direction_and_margin():
    a, b = np.array([62.0, 62.5, 61.5]), np.array([58.0, 58.3, 57.7])
    test = runs_test(a, b)
    assert test["p (difference)"] < 0.01 and test["units"] == "3 vs 3 runs"
    assert decide(test, "better") == SUPPORTED and decide(test, "worse") == CONTRADICTED
    tight = np.array([62.0, 62.05, 61.95])
    small = runs_test(tight, tight - 0.5)  # significant but below the 1-point margin
    assert decide(small, "better") == BELOW_MARGIN
    noisy = runs_test(np.array([60.0, 66.0, 54.0]), np.array([58.0, 64.0, 52.0]))
    assert decide(noisy, "better") == INCONCLUSIVE
    assert decide(runs_test([60.0], [58.0, 59.0]), "better") == ONE_RUN
    with pytest.raises(ValueError, match="unknown expectation"):
        decide(test, "higher")


def test_a_no_difference_claim_needs_its_interval_inside_the_margin():
    tight = runs_test(np.array([60.1, 60.0, 59.9, 60.05, 59.95]), np.array([60.0, 60.1, 59.9, 60.0, 60.02]))
    assert decide(tight, "equal") == SUPPORTED and decide(tight, "no gain") == SUPPORTED
    # a small, non-significant difference with wide runs: the interval crosses the margin, so never "supported"
    wide = runs_test(np.array([61.0, 57.0, 63.0]), np.array([60.0, 58.0, 59.0]))
    assert decide(wide, "better") == INCONCLUSIVE and decide(wide, "equal") == INCONCLUSIVE
    # significantly beyond the margin: an equivalence claim is contradicted; "no gain" is supported when a is worse,
    # and says by how much
    apart = runs_test(np.array([55.0, 55.2, 54.8]), np.array([60.0, 60.2, 59.8]))
    assert decide(apart, "equal") == CONTRADICTED and decide(apart, "no gain") == "supported, worse by 5.0"
    assert decide(runs_test(np.array([65.0, 65.2, 64.8]), np.array([60.0, 60.2, 59.8])), "no gain") == CONTRADICTED


def test_tasks_as_units_for_deterministic_methods():
    rng = np.random.default_rng(0)
    base = rng.uniform(40, 60, 9)
    better = tasks_test(base + 3 + rng.uniform(0, 0.5, 9), base)
    assert decide(better, "better") == SUPPORTED and better["units"] == "9 tasks"
    few = tasks_test(base[:4] + 3, base[:4])
    assert decide(few, "better").startswith("untestable at n=4")
    # a margin test is still possible over few tasks (a paired t); identical scores are equivalent
    assert decide(tasks_test(base, base + 0.01), "equal") == SUPPORTED


def test_a_model_against_itself_is_not_testable():
    rows = [{"model": m, "seed": s, "task": f"t{i}", "category": "STS", "score": 50.0 + i}
            for m, seeds in (("stage 2", (0, 1, 2)), ("stage 1", (0,))) for s in seeds for i in range(9)]
    test = run_comparison(pd.DataFrame(rows), "stage 2", "stage 1")
    assert decide(test, "better") == SAME_MODEL
    # independent chains: each seed's stage 2 kept its own stage 1, so each pair of runs is one model
    chains = [{"model": m, "seed": s, "task": f"t{i}", "category": "STS", "score": 50.0 + i + 3 * s}
              for m in ("stage 2", "stage 1") for s in (0, 1, 2) for i in range(9)]
    assert decide(run_comparison(pd.DataFrame(chains), "stage 2", "stage 1"), "better") == SAME_MODEL
    moved = [r | {"score": r["score"] + 0.5} if r["model"] == "stage 2" and r["seed"] == 1 else r for r in chains]
    assert decide(run_comparison(pd.DataFrame(moved), "stage 2", "stage 1"), "better") != SAME_MODEL


def test_one_verdict_per_statement():
    assert statement_verdict([SUPPORTED, SUPPORTED]) == SUPPORTED
    assert statement_verdict([SUPPORTED, INCONCLUSIVE]) == INCONCLUSIVE
    assert statement_verdict([SUPPORTED, CONTRADICTED, INCONCLUSIVE]) == CONTRADICTED
    assert statement_verdict([SAME_MODEL, SAME_MODEL]) == SAME_MODEL
    assert statement_verdict(["one run per method, no verdict (over tasks: supported)"]) == \
        "one run per method, no verdict"
    assert statement_verdict([]) == "missing results"


def test_a_verdict_is_decided_again_at_its_adjusted_p():
    assert adjusted_verdict(SUPPORTED, "better", 2.0, "", 0.2) == INCONCLUSIVE
    assert adjusted_verdict(INCONCLUSIVE, "better", -2.0, "", 0.01) == CONTRADICTED
    assert adjusted_verdict(INCONCLUSIVE, "better", 0.5, "", 0.01) == BELOW_MARGIN
    assert adjusted_verdict(INCONCLUSIVE, "equal", 0.1, "within", 0.01) == SUPPORTED
    assert adjusted_verdict("untestable at n=2", "better", 5.0, "", 0.001) == "untestable at n=2"
    test = runs_test(np.array([60.1, 60.0, 59.9]), np.array([60.0, 60.1, 59.9]))
    assert claim_p(test, "equal") == min(test["p within margin (equal)"], test["p beyond margin (equal)"])


def test_the_ledger_adjusts_over_its_tests_and_decides_again():
    from scipy.stats import false_discovery_control

    from repro.verdicts.multiplicity import with_adjusted_p

    claims = pd.DataFrame({"comparison": ["a vs b", "c vs d", "e vs f", "g vs h"], "category": ["STS"] * 4,
                           "paired": [9] * 4, "expected": ["better"] * 4, "difference": [3.0, 3.0, 3.0, 3.0],
                           "margin side": [""] * 4, "p": [0.001, 0.01, 0.02, 0.5],
                           "verdict": [SUPPORTED, SUPPORTED, SUPPORTED, INCONCLUSIVE]})
    out = with_adjusted_p(claims)
    np.testing.assert_allclose(out["p (BH)"], false_discovery_control([0.001, 0.01, 0.02, 0.5]))
    assert out["verdict"].tolist() == [SUPPORTED, SUPPORTED, SUPPORTED, INCONCLUSIVE]
    more = with_adjusted_p(pd.concat([claims, claims.assign(comparison=["i vs j", "k vs l", "m vs n", "o vs p"],
                                                            p=[0.6, 0.7, 0.8, 0.9])], ignore_index=True))
    # eight tests in the family: 0.02 adjusts to 0.053, and its verdict is decided again
    assert more["verdict"].tolist()[:3] == [SUPPORTED, SUPPORTED, INCONCLUSIVE]


def test_a_no_difference_claim_names_the_equivalence_test_its_p_comes_from():
    from repro.verdicts.rule import TASKS_TEST, TASKS_TOST, claim_row, runs_test, tasks_test

    rng = np.random.default_rng(0)
    a = rng.normal(60, 5, 9)
    test = tasks_test(a + 0.1 + rng.normal(0, 0.1, 9), a)
    gain = claim_row("c", "a vs b", "STS", "better", test, a + 0.1, a, 9)
    no_gain = claim_row("c", "a vs b", "STS", "no gain", test, a + 0.1, a, 9)
    equal = claim_row("c", "a vs b", "STS", "equal", test, a + 0.1, a, 9)
    assert gain["test"] == TASKS_TEST and gain["p"] == test["p (difference)"]
    assert no_gain["test"] == "one-sided non-superiority test, below the margin (paired t over tasks)"
    assert equal["test"] == TASKS_TOST + " (inside the margin)" and equal["p"] != gain["p"]
    far = runs_test([65.0, 66.0, 65.5], [60.0, 60.5, 59.5])  # 5 points apart: beyond the 1-point margin
    assert claim_row("c", "a vs b", "STS", "equal", far, [65.5], [60.0], 3)["test"] == (
        "one-sided test, beyond the margin (Welch t on per-run means)")


def test_a_not_better_claim_that_collapses_says_worse_by_how_much():
    """A one-sided "no gain" claim whose difference lies wholly below -margin is supported, but says it is worse,
    and the statement says so too; a parity claim ("equal") on the same runs is contradicted."""
    from repro.verdicts.rule import WORSE, base_verdict, is_supported

    collapsed, baseline = np.array([50.0, 51.0, 49.5, 50.5]), np.array([60.0, 61.0, 59.0, 60.5])
    verdict = decide(runs_test(collapsed, baseline), "no gain")
    assert verdict.startswith(WORSE) and is_supported(verdict) and base_verdict(verdict) == SUPPORTED
    assert verdict == f"{WORSE} {abs(collapsed.mean() - baseline.mean()):.1f}"
    assert decide(runs_test(collapsed, baseline), "equal") == CONTRADICTED
    tight = np.array([60.1, 60.0, 59.9, 60.05])
    assert decide(runs_test(tight - 0.1, tight), "no gain") == SUPPORTED  # parity: no qualifier
    assert adjusted_verdict(verdict, "no gain", -10.0, "within", 0.001) == verdict
    assert statement_verdict([verdict, f"{WORSE} 7.0"]).startswith(f"{WORSE} 7.0 to ")
    assert statement_verdict([f"{WORSE} 9.9", SUPPORTED]) == f"{SUPPORTED} (1 of 2 comparisons worse by 9.9)"


def test_the_detectable_effect_and_the_runs_it_needs_agree():
    from repro.verdicts.rule import detectable_effect, units_needed

    sd_a, sd_b, effect = 1.2, 6.3, 2.0
    n = int(units_needed(sd_a, sd_b, effect))
    for k, inside in ((n, True), (n - 1, False)):
        se = np.sqrt((sd_a ** 2 + sd_b ** 2) / k)
        df = (sd_a ** 2 + sd_b ** 2) ** 2 / ((sd_a ** 4 + sd_b ** 4) / (k - 1))
        assert (detectable_effect(se, df) <= effect) == inside
    test = runs_test(np.array([60.0, 61.0, 59.0]), np.array([59.0, 62.0, 58.0]))
    assert test["units a side for 2x margin"] > 3 and test["detectable at 80% power"] > test["se"]
    assert np.isnan(units_needed(0.0, 0.0, 2.0))


def test_holm_within_a_statement_guards_contradicted_if_any():
    """"Contradicted if any" is a union of tests: a comparison contradicted at its ledger-wide p but not after
    Holm within its statement leaves the statement inconclusive."""
    from repro.crosspaper.ledger import with_holm
    from repro.crosspaper.statements import statements

    rows = pd.DataFrame({"paper": "P", "claim": [f"s [STS, {a} vs 1]" for a in (2, 3, 4)], "tier": "headline",
                         "difference": [-3.0, 1.0, 1.5], "paper (quoted)": "-", "p": [0.03, 0.5, 0.6],
                         "p (BH)": [0.03, 0.5, 0.6], "verdict": [CONTRADICTED, INCONCLUSIVE, INCONCLUSIVE],
                         "page": "x", "test": "Welch", "expected": "better"})
    out = with_holm(rows)
    np.testing.assert_allclose(out["p (Holm in statement)"], [0.09, 1.0, 1.0])
    assert statements(out)["verdict"].iloc[0] == INCONCLUSIVE
    strong = with_holm(rows.assign(p=[0.001, 0.5, 0.6]))
    assert statements(strong)["verdict"].iloc[0] == CONTRADICTED


def test_the_tests_the_ledger_uses_are_calibrated_at_the_measured_spreads(monkeypatch):
    """Each of the four tests (Welch on per-run means with the real unequal spreads, the one-sided no-gain test,
    TOST, the Wilcoxon over tasks with Paper 2's real per-task spread) at its worst-case null: at most 6% false
    verdicts; the power is printed."""
    from repro.crosspaper.margins import measured_spreads
    from repro.verdicts.calibration import TEST_TYPES, calibration_by_test

    monkeypatch.delenv("REPRO_RESULTS_DIR", raising=False)  # the spreads measured on the committed results
    spreads = measured_spreads()
    assert {s["units"] for s in spreads} == {"runs", "tasks"}
    table = calibration_by_test(spreads, n_sims=600)
    assert set(table["test"]) == {t[0] for t in TEST_TYPES}
    print(table.to_string())
    assert (table["null rate"] <= 0.06).all(), table[table["null rate"] > 0.06]


def test_the_mixed_model_is_a_sensitivity_fitted_only_where_it_can_be():
    """Runs and tasks as crossed random effects (statsmodels MixedLM): a clear difference gets a small p, none a
    large one; one task (a run's one score cannot separate its effect from the residual) or one run a side: NaN."""
    from repro.verdicts.run_units import mixedlm_p

    clear = simulate_runs(4, 9, effect=4.0, run_sd=1.0, residual_sd=0.5, rng=np.random.default_rng(1))
    # no difference: a's runs are b's, their order over seeds reversed
    b_runs = clear[clear["model"] == "b"]
    none = pd.concat([b_runs.assign(model="a", seed=3 - b_runs["seed"]), b_runs], ignore_index=True)
    assert mixedlm_p(clear, "a", "b", "STS") < 0.01 and mixedlm_p(none, "a", "b", "STS") > 0.5
    one_task = clear[clear["task"] == "t0"]
    assert np.isnan(mixedlm_p(one_task, "a", "b", "STS"))
    assert np.isnan(mixedlm_p(clear[(clear["model"] == "a") | (clear["seed"] == 0)], "a", "b", "STS"))


def test_rank_lists_are_written_as_runs_so_the_leaderboard_column_stays_narrow():
    from repro.verdicts.ranking import rank_ranges

    assert rank_ranges([14, 2, 3, 4, 5, 8, 10, 11, 12]) == "2-5, 8, 10-12, 14"
    assert rank_ranges([3, 4]) == "3, 4" and rank_ranges([7]) == "7"


def test_a_training_free_side_is_one_fixed_value_and_its_test_is_one_sample():
    from repro.verdicts.run_units import FIXED
    from repro.verdicts.seeds import seeded_claims

    rng = np.random.default_rng(3)
    tasks = [f"t{i}" for i in range(6)]
    rows = [{"model": "trained", "seed": s, "unit": f"stage 1 {s}", "task": t, "category": "STS",
             "score": 60 + s + rng.normal(0, 0.2)} for s in range(3) for t in tasks]
    rows += [{"model": "prompt", "seed": 0, "unit": FIXED, "task": t, "category": "STS", "score": 50.0} for t in tasks]
    frame = pd.DataFrame(rows)
    test = run_comparison(frame, "trained", "prompt", "STS")
    assert test["units"] == "3 runs vs one fixed model" and test["test"].startswith("one-sample t-test")
    assert test["difference"] == pytest.approx(11.0, abs=0.3) and test["p (difference)"] < 0.01
    row = seeded_claims(frame, [("x", "trained", "prompt", "STS", "better")]).iloc[0]
    assert row["verdict"] == "supported" and row["units"] == "3 runs vs one fixed model"
    # two runs against the fixed value: too few, as for any trained side
    two = frame[~((frame.model == "trained") & (frame.seed == 2))]
    assert "untestable" in seeded_claims(two, [("x", "trained", "prompt", "STS", "better")]).iloc[0]["verdict"]
    # the same rows without the FIXED unit are one training run: untestable, never a one-sample test
    unfixed = frame.assign(unit=frame["unit"].replace(FIXED, "seed 0"))
    assert run_comparison(unfixed, "trained", "prompt", "STS")["units"] == "3 vs 1 runs"


@pytest.mark.parametrize("pairs", [3, 5])
def test_the_paired_runs_test_is_calibrated_and_keeps_its_power_where_pairs_share_an_upstream_model(pairs):
    """Pairs of runs that share an upstream model (an ablation and its chain's full loss): a chain effect of SD 10
    common to both runs of a pair, a run effect of SD 1 each. Under no difference the paired test decides about 5%
    of draws (alpha) or fewer; at twice the margin it is supported far more often than Welch's test on the same
    draws, which counts the chains' spread as noise (and wrongly takes the two sides as independent)."""
    from repro.verdicts.calibration import paired_rates
    from repro.verdicts.paired_runs import paired_runs_test

    rng = np.random.default_rng(0)
    assert paired_rates(pairs, 10.0, 1.0, 0.0, 2000, rng)["decided"] < 0.07  # alpha 0.05, 2000 draws (SE 0.005)
    power = paired_rates(pairs, 10.0, 1.0, 2 * MARGIN, 2000, rng)
    assert power["supported"] > 0.2 and power["supported"] > 3 * power["welch supported"], power
    assert paired_runs_test([1.0, 2.0], [0.0, 1.0])["untestable"].startswith("untestable")  # 2 pairs: too few
