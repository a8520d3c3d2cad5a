"""The training run as the unit of a comparison: copies of one run counted once (:func:`distinct_runs`), the runs
that share an upstream model as one run, per-run means over a category's shared tasks (:func:`per_run_means`), the
run-level test of two designs (:func:`run_comparison`, :func:`repro.verdicts.rule.runs_test`) and its mixed-model
sensitivity check (:func:`mixedlm_p`)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

from repro.verdicts.paired_runs import paired_per_run_means, paired_runs_test
from repro.verdicts.rule import margin_for, runs_test


def distinct_runs(frame: pd.DataFrame, key: str = "model") -> pd.DataFrame:
    """``frame`` with copies of one run dropped: of a ``key``'s seeds whose per-task scores are identical (one set
    of weights stored under several seeds, e.g. the stage 1 every stage-2 seed started from), the first is kept.
    Copies are not replicates: counting them would shrink the run-to-run variance to zero."""
    keep = []
    for _, part in frame.groupby(key, sort=False):
        seen = set()
        for _seed, run in part.groupby("seed", sort=True, dropna=False):
            signature = tuple(run.sort_values("task")[["task", "score"]].itertuples(index=False, name=None))
            if signature not in seen:
                seen.add(signature)
                keep.append(run)
    return pd.concat(keep) if keep else frame


def _independent_runs(frame: pd.DataFrame, a, b, category: str | None) -> pd.DataFrame:
    """The rows of ``a`` and ``b`` in the category, copies of one run dropped (:func:`distinct_runs`) and the runs
    of one ``unit`` (sharing an upstream model) averaged per task into one run indexed by the unit."""
    part = frame if category is None else frame[frame["category"] == category]
    part = distinct_runs(part[part["model"].isin([a, b])])
    if "unit" in part:  # runs that share an upstream model are one run: their scores averaged per task
        part = part.groupby(["model", "unit", "task"], as_index=False, sort=False)["score"].mean().rename(
            columns={"unit": "seed"})
    return part


def per_run_means(frame: pd.DataFrame, a, b, category: str | None = None) -> tuple[pd.Series, pd.Series, int]:
    """Per-run means of ``a`` and ``b`` over the category's tasks (None: every task) that every run of both has,
    from a long frame (model, seed, task, category, score; copies of one run counted once,
    :func:`distinct_runs`); and the number of those tasks. With a ``unit`` column, the runs of one unit (e.g. the
    stage-2 seeds that start from one stage 1) are one independent run, indexed by the unit."""
    part = _independent_runs(frame, a, b, category)
    runs = part.groupby(["model", "seed"])["task"].apply(set)
    if len(runs) == 0 or a not in runs.index.get_level_values(0) or b not in runs.index.get_level_values(0):
        return pd.Series(dtype=float), pd.Series(dtype=float), 0
    shared = set.intersection(*runs.tolist())
    part = part[part["task"].isin(shared)]
    means = part.groupby(["model", "seed"])["score"].mean()
    return means.loc[a], means.loc[b], len(shared)


def same_model(frame: pd.DataFrame, a, b) -> bool:
    """Are ``a`` and ``b`` one model: every run of either scores every task exactly as every other run (e.g. a
    stage 2 whose dev selection kept the stage-1 weights in every run, against that stage 1), or each run of ``a``
    scores every task exactly as the run of ``b`` of the same seed (each chain's stage 2 is its own stage 1)?"""
    part = frame[frame["model"].isin([a, b])]
    wide = part.pivot_table(index="task", columns=["model", "seed"], values="score", aggfunc="first")
    if wide.empty or a not in wide.columns.get_level_values(0) or b not in wide.columns.get_level_values(0):
        return False
    values = wide.to_numpy()
    if not np.isfinite(values).all():
        return False
    if (values == values[:, :1]).all():
        return True
    # or run by run: each seed of a is the same seed of b (e.g. every independent chain's stage 2 kept its own
    # stage 1's weights), on the same seeds
    first, second = wide[a], wide[b]
    return (set(first.columns) == set(second.columns)
            and all((first[seed] == second[seed]).all() for seed in first.columns))


FIXED = "fixed (training-free)"  # the unit of a deterministic model's rows in a runs frame: one fixed value, no run


def is_fixed(frame: pd.DataFrame, model) -> bool:
    """Is ``model`` a fixed (training-free, deterministic) model in ``frame``: its rows' ``unit`` is :data:`FIXED`?"""
    rows = frame[frame["model"] == model]
    return "unit" in frame and len(rows) > 0 and bool(rows["unit"].eq(FIXED).all())


def run_comparison(frame: pd.DataFrame, a, b, category: str | None = None, margin: float | None = None,
                   paired: bool = False) -> dict:
    """:func:`runs_test` of ``a`` vs ``b`` on the category's per-run means, with the tasks it used (``margin``:
    default the category's, :func:`margin_for`). A fixed ``b`` (:func:`is_fixed`: a training-free model, one value
    on the same tasks) is tested by the one-sample test of ``a``'s runs against it. ``paired``: the runs of one
    ``seed`` on the two sides share an upstream model (an ablation and its chain's full loss): the paired runs test
    (:func:`repro.verdicts.paired_runs.paired_runs_test`) on the seeds both sides hold."""
    margin = margin_for(category) if margin is None else margin
    if paired:
        part = frame if category is None else frame[frame["category"] == category]
        x, y, tasks = paired_per_run_means(part, a, b)
        test = paired_runs_test(x.to_numpy(), y.to_numpy(), margin) | {"tasks": tasks}
    else:
        x, y, tasks = per_run_means(frame, a, b, category)
        test = runs_test(x.to_numpy(), y.to_numpy(), margin, fixed=is_fixed(frame, b)) | {"tasks": tasks}
    if len(x) and same_model(frame, a, b):
        test["same model"] = True
    return test


def mixedlm_p(frame: pd.DataFrame, a, b, category: str | None = None) -> float:
    """A sensitivity check of :func:`run_comparison`: the p of ``a`` vs ``b`` from a linear mixed model with the
    runs and the tasks as crossed random effects (statsmodels ``MixedLM``: score ~ side, variance components for
    run and task), on the category's tasks every run has (the runs of one unit averaged, as
    :func:`per_run_means`). Its p is a large-sample Wald z, anti-conservative at 3-5 runs a side: a sensitivity,
    never the verdict. NaN where it cannot be fitted (fewer than 2 runs a side; one task, where a run's one score
    leaves its effect and the residual apart unidentified; no convergence)."""
    part = _independent_runs(frame, a, b, category)
    runs = part.groupby(["model", "seed"])["task"].apply(set)
    if len(runs) < 4 or min(part.groupby("model")["seed"].nunique().reindex([a, b]).fillna(0)) < 2:
        return np.nan
    shared = set.intersection(*runs.tolist())
    if len(shared) < 2:
        return np.nan
    data = part[part["task"].isin(shared)].assign(
        side=lambda d: (d["model"] == a).astype(float), run=lambda d: d["model"].astype(str) + "/" + d["seed"].astype(str),
        group=1)
    vc = {"run": "0 + C(run)", "task": "0 + C(task)"}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = smf.mixedlm("score ~ side", data, groups="group", vc_formula=vc).fit(reml=True)
        p = float(fit.pvalues["side"])
    except (ValueError, np.linalg.LinAlgError):
        return np.nan
    return p if np.isfinite(p) else np.nan
