"""The verdict engine checked by simulation: its null rate and power at variance components like the ones measured
here (:mod:`repro.verdicts.rule` decides; this module only simulates what it would decide), stored once for the
ledger page."""

from __future__ import annotations

import numpy as np
import pandas as pd

from repro.core.derived import stored_statistic
from repro.verdicts.paired_runs import paired_runs_test
from repro.verdicts.rule import (
    ALPHA,
    CONTRADICTED,
    DECIDED,
    MARGIN,
    RUNS_TEST,
    SUPPORTED,
    TASKS_TEST,
    decide,
    is_supported,
    runs_test,
    tasks_test,
)


def simulate_runs(n_runs: int, n_tasks: int, effect: float, run_sd: float, residual_sd: float,
                  task_sd: float = 10.0, rng: np.random.Generator | None = None) -> pd.DataFrame:
    """Simulated scores of two trained methods "a" and "b" (``effect``: a's true advantage, points): per task a
    random task effect shared by both, per run a random run effect, per (run, task) a residual. The long frame
    the engine reads (model, seed, task, category, score)."""
    rng = rng or np.random.default_rng()
    tasks = rng.normal(60, task_sd, n_tasks)
    rows = []
    for model, shift in (("a", effect), ("b", 0.0)):
        for seed in range(n_runs):
            run = rng.normal(0, run_sd)
            scores = tasks + shift + run + rng.normal(0, residual_sd, n_tasks)
            rows += [{"model": model, "seed": seed, "task": f"t{i}", "category": "STS", "score": s}
                     for i, s in enumerate(scores)]
    return pd.DataFrame(rows)


def simulated_rates(n_sims: int, n_runs: int, n_tasks: int, effect: float, expected: str, run_sd: float = 2.0,
                    residual_sd: float = 1.0, seed: int = 0) -> dict:
    """The engine's verdict rates (:func:`runs_test`, :func:`decide`) on ``n_sims`` comparisons simulated as
    :func:`simulate_runs` does (a shared task effect, a run effect, a residual per run and task), with numpy."""
    rng = np.random.default_rng(seed)
    verdicts = []
    for _ in range(n_sims):
        tasks = rng.normal(60, 10.0, n_tasks)
        a, b = ((tasks + shift + rng.normal(0, run_sd, (n_runs, 1)) + rng.normal(0, residual_sd, (n_runs, n_tasks)))
                .mean(axis=1) for shift in (effect, 0.0))
        verdicts.append(decide(runs_test(a, b), expected))
    counts = pd.Series(verdicts).value_counts()
    return {"supported": counts.get(SUPPORTED, 0) / n_sims, "contradicted": counts.get(CONTRADICTED, 0) / n_sims,
            "decided": sum(counts.get(v, 0) for v in DECIDED) / n_sims, "n": n_sims}


VARIANCES = ((1.0, 0.5), (3.0, 2.0))  # (run SD, residual SD): the low and the high end of the measured ones


def calibration_table(n_sims: int = 400, seed: int = 0) -> pd.DataFrame:
    """The engine checked by simulation at variance components like the measured ones (run SD 1-3, residual SD
    0.5-2, task SD 10): the false "supported or contradicted" rate of a gain claim with no true difference and of
    a no-difference claim whose true difference is exactly the margin (its worst case), and the power to support
    a gain of twice the margin; at 3 and 5 runs per method and 9 and 19 tasks."""
    rows = []
    for runs in (3, 5):
        for tasks in (9, 19):
            for run_sd, residual_sd in VARIANCES:
                k = {"n_runs": runs, "n_tasks": tasks, "run_sd": run_sd, "residual_sd": residual_sd, "seed": seed}
                null = simulated_rates(n_sims, effect=0.0, expected="better", **k)
                boundary = simulated_rates(n_sims, effect=MARGIN, expected="equal", **k)
                power = simulated_rates(n_sims, effect=2 * MARGIN, expected="better", **k)
                rows.append({"runs per method": runs, "tasks": tasks, "run SD": run_sd, "residual SD": residual_sd,
                             "false verdicts, no difference (gain claim)": null["decided"],
                             "false 'supported', difference = margin (equivalence claim)": boundary["supported"],
                             "power, difference = 2 x margin": power["supported"]})
    return pd.DataFrame(rows)


def stored_calibration(n_sims: int = 2000, seed: int = 0, recompute: bool = False) -> pd.DataFrame:
    """:func:`calibration_table`, stored once (:func:`repro.core.derived.stored_statistic`) and keyed by what
    changes it: the simulations, their seed, the margin, alpha, the variance components and the tests used."""
    if not isinstance(n_sims, int) or isinstance(n_sims, bool) or n_sims < 10:
        raise ValueError(f"simulations must be an integer of at least 10, got {n_sims!r}")
    params = {"simulations": n_sims, "seed": seed, "margin": MARGIN, "alpha": ALPHA,
              "variances": [list(v) for v in VARIANCES], "tests": [RUNS_TEST, "TOST", "one-sided margin test"]}
    return stored_statistic("verdict engine calibration by simulation", params,
                            lambda: calibration_table(n_sims, seed).to_dict("records"), recompute)


# the four tests the ledger uses: (name, expected, how the units are drawn, the true difference under the null, the
# true difference the power is stated at); the null is each claim's worst case: no difference for a gain claim, a
# difference of exactly the margin for a claim of no difference
TEST_TYPES = (
    ("Welch t on per-run means (gain)", "better", "runs", 0.0, 2.0),
    ("one-sided no-gain test (runs)", "no gain", "runs", 1.0, 0.0),
    ("TOST (runs)", "equal", "runs", 1.0, 0.0),
    ("Wilcoxon over tasks (Paper 2, gain)", "better", "tasks", 0.0, 2.0),
)


def _draw_rates(expected: str, units: str, effect: float, n_sims: int, n_first: int, n_second: int, sd_first: float,
                sd_second: float, margin: float, rng: np.random.Generator) -> dict:
    """The engine's verdict rates on ``n_sims`` draws: per-run means of two sides with their own SDs (``units``
    "runs": Welch, unequal spreads), or ``n_first`` per-task differences with SD ``sd_first`` (``units`` "tasks":
    deterministic methods, the Wilcoxon / paired t over tasks)."""
    verdicts = []
    for _ in range(n_sims):
        if units == "runs":
            test = runs_test(rng.normal(effect, sd_first, n_first), rng.normal(0.0, sd_second, n_second), margin)
        else:
            test = tasks_test(rng.normal(effect, sd_first, n_first), np.zeros(n_first), margin)
        verdicts.append(decide(test, expected))
    verdicts = pd.Series(verdicts, dtype=object)
    return {"supported": float(verdicts.map(is_supported).mean()),
            "decided": float((verdicts.map(is_supported) | verdicts.eq(CONTRADICTED)).mean())}


def calibration_by_test(spreads: list[dict], n_sims: int = 1000, margin: float = MARGIN, seed: int = 0
                        ) -> pd.DataFrame:
    """Each test the ledger uses (:data:`TEST_TYPES`) at each measured spread in ``spreads`` (dicts with "what",
    "units" ("runs" or "tasks"), "n first", "n second", "SD first", "SD second": per-run-mean SDs of two real designs,
    or the SD of real per-task differences): its null rate (a gain claim: any decided verdict under no difference; a
    no-difference claim: "supported" at a true difference of exactly the margin) and its power (a gain claim:
    "supported" at twice the margin; a no-difference claim: "supported" at no difference)."""
    rng = np.random.default_rng(seed)
    rows = []
    for name, expected, units, null_effect, power_effect in TEST_TYPES:
        for spread in (s for s in spreads if s["units"] == units):
            at = spread.get("margin", margin)  # the margin of the spread's metric where it names one
            args = (n_sims, spread["n first"], spread["n second"], spread["SD first"], spread["SD second"], at, rng)
            null = _draw_rates(expected, units, null_effect * at, *args)
            power = _draw_rates(expected, units, power_effect * at, *args)
            rows.append({"test": name, "spreads from": spread["what"],
                         "units a side": (f"{spread['n first']} vs {spread['n second']} runs" if units == "runs"
                                          else f"{spread['n first']} tasks"),
                         "SDs": (f"{spread['SD first']:.2f} / {spread['SD second']:.2f}" if units == "runs"
                                 else f"{spread['SD first']:.2f}"),
                         "margin": at, "null rate": null["decided" if expected in ("better", "worse") else "supported"],
                         "null": "no difference" if null_effect == 0 else "difference = margin",
                         "power": power["supported"],
                         "power at": "2 x margin" if power_effect else "no difference"})
    return pd.DataFrame(rows)


def stored_calibration_by_test(spreads: list[dict], n_sims: int = 2000, seed: int = 0, recompute: bool = False
                               ) -> pd.DataFrame:
    """:func:`calibration_by_test`, stored once and keyed by the spreads, the simulations, the seed, the margin,
    alpha and the tests."""
    if not isinstance(n_sims, int) or isinstance(n_sims, bool) or n_sims < 10:
        raise ValueError(f"simulations must be an integer of at least 10, got {n_sims!r}")
    params = {"simulations": n_sims, "seed": seed, "margin": MARGIN, "alpha": ALPHA,
              "spreads": [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in s.items()} for s in spreads],
              "tests": [t[0] for t in TEST_TYPES] + [RUNS_TEST, TASKS_TEST]}
    return stored_statistic("verdict engine calibration by test type", params,
                            lambda: calibration_by_test(spreads, n_sims, MARGIN, seed).to_dict("records"), recompute)


def paired_rates(pairs: int, chain_sd: float, run_sd: float, effect: float, n_sims: int,
                 rng: np.random.Generator, margin: float = MARGIN) -> dict:
    """The paired runs test (:mod:`repro.verdicts.paired_runs`) on ``n_sims`` draws of ``pairs`` pairs of runs that
    share an upstream model (a chain effect of SD ``chain_sd`` common to both runs of a pair, a run effect of SD
    ``run_sd`` each; ``effect``: the first side's true advantage) on a gain claim: the share of decided verdicts,
    of "supported", and of "supported" by Welch's test on the same draws (which counts the chains' spread as
    noise)."""
    decided = supported = welch = 0
    for _ in range(n_sims):
        chains = rng.normal(0, chain_sd, pairs)
        x, y = chains + effect + rng.normal(0, run_sd, pairs), chains + rng.normal(0, run_sd, pairs)
        verdict = decide(paired_runs_test(x, y, margin), "better")
        decided += is_supported(verdict) or verdict == CONTRADICTED
        supported += is_supported(verdict)
        welch += is_supported(decide(runs_test(x, y, margin), "better"))
    return {"decided": decided / n_sims, "supported": supported / n_sims, "welch supported": welch / n_sims}


def paired_calibration(chain_sd: float, run_sd: float = MARGIN, pairs: tuple[int, ...] = (3, 5),
                       n_sims: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The paired runs test's null rate (a gain claim: any decided verdict under no difference) and power (at twice
    the margin), beside Welch's power on the same draws, per number of pairs."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in pairs:
        null = paired_rates(n, chain_sd, run_sd, 0.0, n_sims, rng)
        power = paired_rates(n, chain_sd, run_sd, 2 * MARGIN, n_sims, rng)
        rows.append({"pairs (chains)": n, "chain SD": chain_sd, "run SD": run_sd, "null rate": null["decided"],
                     "power at 2x margin": power["supported"], "Welch's power, same draws": power["welch supported"]})
    return pd.DataFrame(rows)


def stored_paired_calibration(chain_sd: float, n_sims: int = 2000, seed: int = 0,
                              recompute: bool = False) -> pd.DataFrame:
    """:func:`paired_calibration`, stored once and keyed by the chain spread, the simulations, the seed, the margin
    and alpha."""
    params = {"simulations": n_sims, "seed": seed, "margin": MARGIN, "alpha": ALPHA, "chain SD": round(chain_sd, 6),
              "run SD": MARGIN, "pairs": [3, 5]}
    return stored_statistic("paired runs test calibration by simulation", params,
                            lambda: paired_calibration(chain_sd, n_sims=n_sims, seed=seed).to_dict("records"),
                            recompute)
