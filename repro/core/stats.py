"""Paired tests for claims at our scale (scipy.stats; never hand-rolled p-values).

* :func:`wilcoxon_over_tasks`: the papers' test, two-sided Wilcoxon signed-rank over datasets. With n
  paired datasets the smallest attainable p is 2/2ⁿ, so n < 6 can never reach 0.05: reported, not hidden.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def min_attainable_p(n: int) -> float:
    return 2.0 / 2 ** n if n > 0 else 1.0


UNSETTLED = "direction unsettled (significant signed ranks, mean difference of the other sign)"
# the words the paired tests return (a paired bootstrap's verdict; a Wilcoxon's is prefixed by SIGNIFICANT): the
# verdict engine (repro.verdicts.rule) re-exports them, and every reader compares against these names
FIRST_BETTER, SECOND_BETTER, NOT_SIGNIFICANT = "first better", "second better", "not significant"
SIGNIFICANT = "significant: "


def wilcoxon_over_tasks(a, b, alpha: float = 0.05, unit: str = "tasks") -> dict:
    """Two-sided Wilcoxon signed-rank test of paired per-task scores ``a`` vs ``b`` (NaN pairs dropped).
    ``unit`` names what is paired (tasks, sentences, ...) in the reported test name. The direction of a
    significant result is the sign of the signed-rank sum (what the test measures), and the smallest
    attainable p counts only non-zero differences (scipy drops zeros). A significant test whose mean difference
    does not have the sign of its signed-rank sum (a few large differences against many small ones, or a mean of
    exactly 0) settles no direction: :data:`UNSETTLED`."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    n = int(len(a))
    diff = a - b
    nonzero = diff[diff != 0]
    out = {"test": f"Wilcoxon signed-rank over {unit} (two-sided)", "n": n,
           "mean_difference": float(np.mean(diff)) if n else np.nan,
           "min_attainable_p": min_attainable_p(len(nonzero))}
    if n == 0 or len(nonzero) == 0:  # identical scores: no difference, if n pairs could have shown one
        verdict = ("no data" if n == 0 else "no difference" if min_attainable_p(n) <= alpha else
                   f"untestable at n={n} (smallest possible p = {min_attainable_p(n):.3f})")
        return out | {"statistic": np.nan, "p": 1.0 if n else np.nan, "verdict": verdict}
    res = stats.wilcoxon(a, b, alternative="two-sided")
    p = float(res.pvalue)
    ranks = stats.rankdata(np.abs(nonzero))
    rank_sum = float(ranks[nonzero > 0].sum() - ranks[nonzero < 0].sum())
    if out["min_attainable_p"] > alpha:
        verdict = f"untestable at n={len(nonzero)} (smallest possible p = {out['min_attainable_p']:.3f})"
    elif p < alpha and np.sign(out["mean_difference"]) != np.sign(rank_sum):
        verdict = UNSETTLED
    elif p < alpha:
        verdict = SIGNIFICANT + (FIRST_BETTER if rank_sum > 0 else SECOND_BETTER)
    else:
        verdict = NOT_SIGNIFICANT
    return out | {"statistic": float(res.statistic), "p": p, "signed_rank_sum": rank_sum, "verdict": verdict}


def spearman_along(x, y, axis: int = -1) -> np.ndarray:
    """Spearman's rho of ``x`` and ``y`` along ``axis`` (Pearson of average ranks, as scipy.stats.spearmanr),
    for many resamples at once; NaN where a resample is constant."""
    rx, ry = stats.rankdata(x, axis=axis), stats.rankdata(y, axis=axis)
    rx = rx - rx.mean(axis=axis, keepdims=True)
    ry = ry - ry.mean(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * ry).sum(axis=axis) / np.sqrt((rx * rx).sum(axis=axis) * (ry * ry).sum(axis=axis))


def paired_bootstrap_spearman(gold, sims_a, sims_b, n_resamples: int = 1000, seed: int = 0,
                              confidence: float = 0.95) -> dict:
    """Paired bootstrap over sentence pairs of Spearman(gold, a) - Spearman(gold, b).

    Spearman is a set statistic, so pairs are resampled and both models' Spearman recomputed on the
    same resample (scipy.stats.bootstrap, paired). Verdict: significant when the CI excludes 0."""
    gold, a, b = (np.asarray(x, dtype=float) for x in (gold, sims_a, sims_b))
    name = f"paired bootstrap over pairs ({n_resamples} resamples, {confidence:.0%} CI)"
    if not (np.isfinite(a).all() and np.isfinite(b).all()) or np.ptp(a) == 0 or np.ptp(b) == 0:
        return {"test": name, "difference": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                "verdict": "undefined (a constant or non-finite similarity)"}

    def diff(g, x, y, axis=-1):  # every resample at once (the same resamples as a loop over spearmanr)
        return spearman_along(g, x, axis) - spearman_along(g, y, axis)

    observed = stats.spearmanr(gold, a)[0] - stats.spearmanr(gold, b)[0]
    res = stats.bootstrap((gold, a, b), diff, paired=True, vectorized=True, n_resamples=n_resamples,
                          confidence_level=confidence, method="percentile", random_state=seed)
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    verdict = NOT_SIGNIFICANT if low <= 0 <= high else (FIRST_BETTER if low > 0 else SECOND_BETTER)
    return {"test": name, "difference": float(observed), "ci_low": low, "ci_high": high, "verdict": verdict}


def paired_bootstrap_mean(a, b, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> dict:
    """Paired bootstrap CI of the mean difference ``a - b`` over paired units (e.g. datasets)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = ~(np.isnan(a) | np.isnan(b))
    diff = a[keep] - b[keep]
    name = f"paired bootstrap of the mean difference ({n_resamples} resamples, {confidence:.0%} CI)"
    if len(diff) < 2 or np.ptp(diff) == 0:
        mean = float(diff.mean()) if len(diff) else np.nan
        return {"test": name, "n": int(len(diff)), "difference": mean, "ci_low": mean, "ci_high": mean,
                "verdict": "no data" if not len(diff) else "degenerate (fewer than 2 distinct differences)"}
    res = stats.bootstrap((diff,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
                          method="percentile", random_state=seed)
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    verdict = NOT_SIGNIFICANT if low <= 0 <= high else (FIRST_BETTER if low > 0 else SECOND_BETTER)
    return {"test": name, "n": int(len(diff)), "difference": float(diff.mean()), "ci_low": low, "ci_high": high,
            "verdict": verdict}


def paired_bootstrap_statistic(statistic, arrays: tuple, n_resamples: int = 1000, seed: int = 0,
                               confidence: float = 0.95, unit: str = "units") -> dict:
    """Paired bootstrap over units of ``statistic(*resampled arrays)`` (a difference of two models' set
    statistics on the same resample, e.g. average precision or V-measure). Significant when the CI excludes 0."""
    name = f"paired bootstrap over {unit} ({n_resamples} resamples, {confidence:.0%} CI)"
    observed = float(statistic(*arrays))
    res = stats.bootstrap(arrays, statistic, paired=True, vectorized=False, n_resamples=n_resamples,
                          confidence_level=confidence, method="percentile", random_state=seed)
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    verdict = NOT_SIGNIFICANT if low <= 0 <= high else (FIRST_BETTER if low > 0 else SECOND_BETTER)
    return {"test": name, "n": int(len(arrays[0])), "difference": observed, "ci_low": low, "ci_high": high,
            "verdict": verdict}
