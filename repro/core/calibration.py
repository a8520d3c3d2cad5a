"""The verdict engine checked by simulation: its null rate and power at variance components like the ones measured
here (:mod:`repro.core.verdicts` decides; this module only simulates what it would decide), stored once for the
ledger page."""

from __future__ import annotations

import numpy as np
import pandas as pd

from repro.core.derived import stored_statistic
from repro.core.verdicts import ALPHA, CONTRADICTED, DECIDED, MARGIN, RUNS_TEST, SUPPORTED, decide, runs_test


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
