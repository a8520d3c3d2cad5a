"""Verdicts over training runs: the seed spread, seed-averaged scores (descriptive), claims judged with the runs as
units (:mod:`repro.verdicts.rule`), and the paired tests inside each task at a shared seed.

Frames are long: one row per (model, seed, task) with ``category`` and ``score`` (x100). A claim about trained
methods is tested with each training run as a replicate (Welch's t-test on per-run means); one run per method gives
no verdict. The in-task tests (bootstraps over pairs, queries or examples) are descriptive: they say how stable a
difference is inside one run. They read the stored per-task records keyed ``(model, seed, task)``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import numpy as np
import pandas as pd

from repro.core.paired import lacks_units, paired_test
from repro.core.tasks import TASKS
from repro.verdicts.rule import claim_row, is_tested
from repro.verdicts.run_units import mixedlm_p, run_comparison


def seed_spread(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model: the number of seeds and the standard deviation (ddof 1) over seeds of its mean score over
    all tasks and per category (NaN with one seed)."""
    rows = []
    for model, part in frame.groupby("model"):
        means = {"all tasks": part.groupby("seed")["score"].mean()}
        means.update({c: p.groupby("seed")["score"].mean() for c, p in part.groupby("category")})
        rows.append({"model": model, "seeds": part["seed"].nunique(),
                     **{c: float(m.std(ddof=1)) if len(m) > 1 else np.nan for c, m in means.items()}})
    return pd.DataFrame(rows).set_index("model")


def seed_averaged(frame: pd.DataFrame) -> pd.DataFrame:
    """rows (category, task) x columns model: the score averaged over the seeds each model has."""
    return frame.pivot_table(index=["category", "task"], columns="model", values="score", aggfunc="mean")


ONE_RUN_PREFIX = "one run per method, no verdict"


def one_seed(claims: pd.DataFrame) -> pd.DataFrame:
    """A claims table computed from one training run per method: runs are the units of replication, so one run
    gives no verdict. Each tested verdict becomes "one run per method, no verdict (over tasks: <what the test over
    tasks found>)", descriptive only and never counted."""
    if claims.empty or "verdict" not in claims:  # no statement to mark (e.g. an empty grid)
        return claims
    claims = claims.copy()
    claims["verdict"] = [f"{ONE_RUN_PREFIX} (over tasks: {v})" if is_tested(v) else v
                                      for v in claims["verdict"]]
    return claims


def seeded_claims(frame: pd.DataFrame, claims: Iterable[tuple], paired: bool | Collection[frozenset] = False
                  ) -> pd.DataFrame:
    """Each ``(claim, a, b, category, expected)`` about trained methods, judged with the training runs as units
    (:func:`repro.verdicts.run_units.run_comparison`: Welch's t-test on the per-run means over the category's tasks, and
    the margin tests for "no gain" / "equal"). ``seeds``: the fewer of the two models' runs; ``seeds
    (first/second)``: both; ``seed spread``: the larger of the two SDs over runs of the per-run mean (descriptive).
    ``paired``: the two models' runs of one seed share an upstream model (:func:`run_comparison`): True for every
    claim, or the model pairs (``frozenset({a, b})``) for which it holds."""
    rows = []
    for claim, a, b, category, expected in claims:
        test = run_comparison(frame, a, b, category, paired=paired is True or (
            not isinstance(paired, bool) and frozenset((a, b)) in paired))
        x, y = test["runs"]
        part = frame if category is None else frame[frame["category"] == category]
        key = "unit" if "unit" in part else "seed"  # one independent run per unit (run_units.per_run_means)
        means = part[part["model"].isin([a, b])].groupby(["model", key])["score"].mean()
        sd = [means.loc[m].std(ddof=1) if m in means.index.get_level_values(0) and len(means.loc[m]) > 1 else np.nan
              for m in (a, b)]
        row = claim_row(claim, f"{a} vs {b}", category or "all tasks", expected, test,
                        means.loc[a] if x else [], means.loc[b] if y else [], test.get("tasks", 0))
        tail = {k: row.pop(k) for k in ("margin side", "verdict")}  # the seed columns before them
        if category is not None:  # a category statement: the mixed model over runs and tasks, as a sensitivity
            row["p (MixedLM)"] = mixedlm_p(frame, a, b, category)
        rows.append(row | {"seeds": min(x, y), "seeds (first/second)": f"{x}/{y}",
                           "seed spread": float(np.nanmax(sd)) if not np.all(np.isnan(sd)) else np.nan} | tail)
    return pd.DataFrame(rows)


def in_task_tests(records: dict, a, b, seed: int = 0, n_resamples: int = 1000) -> pd.DataFrame:
    """Per task both models have (same seed): the paired test of ``a`` vs ``b`` inside the task. A score stored
    before per-unit data were kept gives the row "untestable (no per-unit data stored)" and no statistic."""
    rows = []
    tasks = sorted({t for (m, s, t) in records if m == a and s == seed} & {t for (m, s, t) in records
                                                                           if m == b and s == seed})
    for task in tasks:
        pair = (records[(a, seed, task)], records[(b, seed, task)])
        if any(lacks_units(r, task) for r in pair):
            rows.append({"comparison": f"{a} vs {b}", "seed": seed, "task": task, "category": TASKS[task].category,
                         "verdict": "untestable (no per-unit data stored)"})
            continue
        test = paired_test(*pair, n_resamples)
        rows.append({"comparison": f"{a} vs {b}", "seed": seed, **test})
    return pd.DataFrame(rows)


def consistent_in_tasks(in_task: pd.DataFrame, seeds: Iterable[int]) -> pd.DataFrame:
    """Per comparison and task: is the in-task difference significant with the same sign at EVERY one of ``seeds``
    (the rows of :func:`in_task_tests`)? "first better at every seed" / "second better at every seed" / "not
    consistent" (a seed missing, not significant, or of the other sign). The in-task tests are descriptive (how
    stable a difference is inside one run); only this agreement across runs lets a page call it consistent."""
    seeds = list(seeds)
    rows = []
    for (comparison, task), part in in_task.groupby(["comparison", "task"], sort=False):
        verdicts = part.set_index("seed")["verdict"].reindex(seeds)
        outcome = next((f"{side} better at every seed" for side in ("first", "second")
                        if (verdicts == f"{side} better").all()), "not consistent")
        rows.append({"comparison": comparison, "task": task, "category": part["category"].iloc[0],
                     "seeds": int(verdicts.notna().sum()), "outcome": outcome})
    return pd.DataFrame(rows, columns=["comparison", "task", "category", "seeds", "outcome"])
