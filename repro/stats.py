"""Paired tests for claims at our scale (scipy.stats; never hand-rolled p-values).

* :func:`wilcoxon_over_tasks`: the papers' test, two-sided Wilcoxon signed-rank over datasets. With n
  paired datasets the smallest attainable p is 2/2ⁿ, so n < 6 can never reach 0.05: reported, not hidden.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def min_attainable_p(n: int) -> float:
    return 2.0 / 2 ** n if n > 0 else 1.0


def wilcoxon_over_tasks(a, b, alpha: float = 0.05) -> dict:
    """Two-sided Wilcoxon signed-rank test of paired per-task scores ``a`` vs ``b`` (NaN pairs dropped)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    n = int(len(a))
    out = {"test": "Wilcoxon signed-rank over tasks (two-sided)", "n": n, "mean_difference": float(np.mean(a - b)) if n else np.nan,
           "min_attainable_p": min_attainable_p(n)}
    if n == 0 or np.allclose(a, b):
        return out | {"statistic": np.nan, "p": 1.0 if n else np.nan, "verdict": "no difference" if n else "no data"}
    res = stats.wilcoxon(a, b, alternative="two-sided")
    p = float(res.pvalue)
    if out["min_attainable_p"] > alpha:
        verdict = f"untestable at n={n} (smallest possible p = {out['min_attainable_p']:.3f})"
    elif p < alpha:
        verdict = "significant: " + ("first better" if out["mean_difference"] > 0 else "second better")
    else:
        verdict = "not significant"
    return out | {"statistic": float(res.statistic), "p": p, "verdict": verdict}
