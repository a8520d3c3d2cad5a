"""The paired runs test: each unit is a pair of training runs that share an upstream model, one run per side (an
ablation and its own chain's full loss, both trained from that chain's stage 1). The runs are still the units of
replication, but the two sides are not independent samples: what the shared upstream model adds to both cancels in
the pair's difference. Welch's test (:func:`repro.verdicts.rule.runs_test`) would count that shared part as noise
(and assume an independence the design lacks); this test takes the per-pair differences of the per-run means (the
paired t-test, ``scipy.stats.ttest_rel``) with the margin tests on the same standard error and ``n - 1`` degrees of
freedom. Fewer than :data:`~repro.verdicts.rule.MIN_RUNS` pairs: untestable, as any runs test."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from repro.verdicts.rule import MARGIN, MIN_RUNS, MISSING, ONE_RUN, few_runs, with_margin_tests, with_power

PAIRED_RUNS_TEST = "paired t-test on per-run means (runs as units, each pair from one upstream model)"


def paired_runs_test(a_runs, b_runs, margin: float = MARGIN) -> dict:
    """``a_runs[i]`` and ``b_runs[i]``: the per-run means of the two runs of pair ``i`` (over the same tasks); pairs
    with a missing side are left out. The paired t-test of the differences and the margin tests on its standard
    error; ``SD first`` is the SD of the differences (a paired design's one spread, ``SD second`` 0)."""
    x, y = np.asarray(a_runs, dtype=float), np.asarray(b_runs, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    d = x[keep] - y[keep]
    n = len(d)
    out = {"test": PAIRED_RUNS_TEST, "units": f"{n} paired run{'' if n == 1 else 's'}", "runs": (n, n),
           "difference": float(d.mean()) if n else np.nan}
    sd = float(d.std(ddof=1)) if n > 1 else np.nan
    if n < MIN_RUNS:
        why = MISSING if n == 0 else ONE_RUN if n == 1 else few_runs(n, n)
        return with_power(out | {"untestable": why, "p (difference)": np.nan, "margin": margin}, sd, 0.0, margin)
    se = sd / np.sqrt(n)
    p = float(stats.ttest_rel(x[keep], y[keep]).pvalue) if se > 0 else (1.0 if out["difference"] == 0 else 0.0)
    return with_power(with_margin_tests(out | {"p (difference)": p}, se, float(n - 1), margin), sd, 0.0, margin)


def paired_per_run_means(part: pd.DataFrame, a, b) -> tuple[pd.Series, pd.Series, int]:
    """The per-run means of ``a`` and ``b`` over the tasks every run of both has, indexed by ``seed`` (the pair:
    e.g. the chain both runs come from) and aligned on the seeds both hold; and the number of those tasks."""
    part = part[part["model"].isin([a, b])]
    runs = part.groupby(["model", "seed"])["task"].apply(set)
    if a not in runs.index.get_level_values(0) or b not in runs.index.get_level_values(0):
        return pd.Series(dtype=float), pd.Series(dtype=float), 0
    shared = set.intersection(*runs.tolist())
    means = part[part["task"].isin(shared)].groupby(["model", "seed"])["score"].mean()
    pairs = sorted(set(means.loc[a].index) & set(means.loc[b].index))
    return means.loc[a].reindex(pairs), means.loc[b].reindex(pairs), len(shared)
