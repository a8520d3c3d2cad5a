"""The verdict engine: one rule for every claim the book tests.

A claim compares ``a`` with ``b`` (a method, a model design, a filter) on a category's tasks and expects one of:

* ``"better"`` / ``"worse"``: a gain (or a loss) of ``a`` over ``b``;
* ``"no gain"``: ``a`` is not better than ``b`` by the margin or more (a one-sided equivalence, or
  non-superiority, test: the paper's "not significantly better", "no consistent meaningful gain");
* ``"equal"``: ``a`` and ``b`` are within the margin of each other (two one-sided tests, TOST: "about equal",
  "stable", "performs similarly").

**The units of replication.** For trained methods each training run is a replicate and the tasks are repeated
measures inside it: the test is Welch's t-test on the per-run means over the category's tasks
(:func:`runs_test`). A per-run mean averages the same tasks for every run, so the task effect cancels from the
difference and what is left is the run-to-run noise, which a Wilcoxon over tasks on seed-averaged scores cannot
see (simulated: it calls 13-21% of null comparisons significant; this test 5%, ``tests/test_verdicts.py``). This
is the test on per-run means equivalent to the mixed model ``score ~ method + (1 | task) + (1 | run)`` with the
tasks held fixed. Deterministic (training-free) methods have no run noise: their units are the tasks
(:func:`tasks_test`: the two-sided Wilcoxon signed-rank over tasks for a difference, a paired t TOST over tasks
for equivalence).

**The margin** :data:`MARGIN` (1.0 point x100 on the category mean) is declared once. Its reason: it is the
smallest difference the papers themselves treat as a finding (Tang & Yang call gains under a point "no
meaningful gain"; EmbedFilter's main-table gains are 1-3 points; AutoRegEmbed's ablation rows differ by 0.05 to
2 points and the authors call the 0.2-point ones "similar"), and it is about the run-level SD of a converged
design's STS mean here (0.08 for model 1, 2.3-4.2 for models 2-5 on smollm2): a smaller margin could not be
resolved with 3-5 runs.

**Verdicts** (:func:`decide`), at level ``alpha`` on the p-value the ledger adjusts for multiplicity:

* a gain claim is *supported* when the difference is significant in the expected direction and at least the
  margin; *contradicted* when significant the other way and at least the margin; *significant but below the
  margin* when significant and smaller than the margin, either way; *inconclusive* otherwise;
* a no-difference claim is *supported* only when its interval lies inside the margin (TOST, or the one-sided test
  for "no gain"), *contradicted* when the difference is significantly beyond the margin, *inconclusive*
  otherwise: a non-significant difference never supports it;
* *untestable* when the units cannot give a test (one run per method, fewer than 6 tasks for a Wilcoxon);
  *not testable (the same model)* when the two sides are one model (every run and task identical).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
from scipy import stats

from repro.core.stats import min_attainable_p

MARGIN = 1.0  # points x100 on a category mean: see the module's docstring for its reason
ALPHA = 0.05
EXPECTATIONS = ("better", "worse", "no gain", "equal")
GAIN, NO_DIFFERENCE = ("better", "worse"), ("no gain", "equal")

SUPPORTED, CONTRADICTED, INCONCLUSIVE = "supported", "contradicted", "inconclusive"
BELOW_MARGIN = "significant but below the margin"
SAME_MODEL = "not testable (the same model on both sides)"
ONE_RUN = "untestable (one training run per method: no run-level test)"
# independent training runs a side needs for a runs test (one rule, every page): two would leave a one-sample test
# with 1 degree of freedom. Runs that share an upstream model (AutoRegEmbed's stage-2 seeds from one stage 1) are
# one run: a frame's "unit" column names what makes a run independent (:func:`per_run_means`).
MIN_RUNS = 3


def few_runs(first: int, second: int | None = None) -> str:
    """The verdict of a runs test with too few independent runs on a side (``second`` None: one fixed model)."""
    counts = f"{first} vs one fixed model" if second is None else f"{first} vs {second}"
    return f"untestable (independent training runs: {counts}; a test needs {MIN_RUNS} a side)"
MISSING = "missing results"
DECIDED = (SUPPORTED, CONTRADICTED)  # the verdicts a test decides (the calibration counts them)

RUNS_TEST = "Welch t-test on per-run means (runs as units)"
TASKS_TEST = "Wilcoxon signed-rank over tasks (two-sided)"
TASKS_TOST = "paired t TOST over tasks"


def _check(expected: str) -> None:
    if expected not in EXPECTATIONS:
        raise ValueError(f"unknown expectation '{expected}'; valid: {', '.join(EXPECTATIONS)}")


def _margin_p(difference: float, se: float, df: float, margin: float) -> tuple[float, float]:
    """(p within the margin, p beyond it) for a difference with standard error ``se`` on ``df`` degrees of
    freedom: the TOST p (the larger of the two one-sided p's that the difference is above -margin and below
    +margin) and the smaller one-sided p that it is beyond +margin or below -margin."""
    if not se > 0 or not np.isfinite(se):
        inside = abs(difference) < margin
        return (0.0, 1.0) if inside else (1.0, 0.0)
    above_low = stats.t.sf((difference + margin) / se, df)  # H0: d <= -margin
    below_high = stats.t.cdf((difference - margin) / se, df)  # H0: d >= +margin
    beyond_high = stats.t.sf((difference - margin) / se, df)  # H0: d <= +margin
    beyond_low = stats.t.cdf((difference + margin) / se, df)  # H0: d >= -margin
    return float(max(above_low, below_high)), float(min(beyond_high, beyond_low))


def _no_gain_p(difference: float, se: float, df: float, margin: float) -> tuple[float, float]:
    """(p that the difference is below +margin, p that it is above it): the one-sided non-superiority test."""
    if not se > 0 or not np.isfinite(se):
        return (0.0, 1.0) if difference < margin else (1.0, 0.0)
    return float(stats.t.cdf((difference - margin) / se, df)), float(stats.t.sf((difference - margin) / se, df))


def claim_p(test: dict, expected: str) -> float:
    """The one p-value a claim's verdict rests on (the one the ledger adjusts): the two-sided p of the difference
    for a gain claim; for a no-difference claim the smaller of the p within and the p beyond the margin (only
    one of them can be below 0.5)."""
    _check(expected)
    if expected in GAIN:
        return test.get("p (difference)", np.nan)
    within, beyond = test.get(f"p within margin ({expected})", np.nan), test.get(f"p beyond margin ({expected})", np.nan)
    return float(np.nanmin([within, beyond])) if not (pd.isna(within) and pd.isna(beyond)) else np.nan


def _with_margin_tests(out: dict, se: float, df: float, margin: float) -> dict:
    d = out["difference"]
    within, beyond = _margin_p(d, se, df, margin)
    ng_within, ng_beyond = _no_gain_p(d, se, df, margin)
    t90 = stats.t.ppf(0.95, df) if df > 0 else np.nan
    t95 = stats.t.ppf(0.975, df) if df > 0 else np.nan
    return out | {"se": se, "df": df, "90% CI": (d - t90 * se, d + t90 * se), "95% CI": (d - t95 * se, d + t95 * se),
                  "p within margin (equal)": within, "p beyond margin (equal)": beyond,
                  "p within margin (no gain)": ng_within, "p beyond margin (no gain)": ng_beyond, "margin": margin}


def runs_test(a_runs, b_runs, margin: float = MARGIN, fixed: bool = False) -> dict:
    """Runs as units: ``a_runs`` and ``b_runs`` are per-run means over the same tasks (one value per training
    run). Welch's t-test for the difference of the means, and the margin tests on the same standard error and
    Welch-Satterthwaite degrees of freedom. One run on a side: :data:`ONE_RUN`; fewer than :data:`MIN_RUNS`:
    :func:`few_runs`. ``fixed``: ``b`` is one fixed model, not a random training run (a training-free method): a
    one-sample t-test of ``a``'s runs against its one value."""
    x, y = np.asarray(a_runs, dtype=float), np.asarray(b_runs, dtype=float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    out = {"test": RUNS_TEST, "units": f"{len(x)} vs {len(y)} runs", "runs": (len(x), len(y)),
           "difference": float(x.mean() - y.mean()) if len(x) and len(y) else np.nan}
    if fixed and len(y) == 1 and 1 < len(x) < MIN_RUNS:
        return out | {"units": f"{len(x)} runs vs one fixed model", "untestable": few_runs(len(x)),
                      "p (difference)": np.nan}
    if fixed and len(y) == 1 and len(x) >= MIN_RUNS:
        se = float(x.std(ddof=1) / np.sqrt(len(x)))
        p = float(stats.ttest_1samp(x, y[0]).pvalue) if se > 0 else float(out["difference"] == 0)
        return _with_margin_tests(out | {"test": "one-sample t-test of the runs against one fixed model",
                                         "units": f"{len(x)} runs vs one fixed model", "p (difference)": p},
                                  se, float(len(x) - 1), margin)
    if len(x) < MIN_RUNS or len(y) < MIN_RUNS:
        why = MISSING if not (len(x) and len(y)) else ONE_RUN if min(len(x), len(y)) == 1 else few_runs(len(x), len(y))
        return out | {"untestable": why, "p (difference)": np.nan}
    va, vb = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se = float(np.sqrt(va + vb))
    if se == 0:  # every run of each side identical: an exact difference
        df = float(len(x) + len(y) - 2)
        p = 1.0 if out["difference"] == 0 else 0.0
    else:
        df = float((va + vb) ** 2 / (va ** 2 / (len(x) - 1) + vb ** 2 / (len(y) - 1))) if va + vb > 0 else np.inf
        p = float(stats.ttest_ind(x, y, equal_var=False).pvalue)
    return _with_margin_tests(out | {"p (difference)": p}, se, df, margin)


def tasks_test(a, b, margin: float = MARGIN, alpha: float = ALPHA) -> dict:
    """Tasks as units (deterministic methods): per-task scores ``a`` and ``b`` (NaN pairs dropped). The difference
    is tested by the two-sided Wilcoxon signed-rank over tasks (untestable below 6 tasks: the smallest attainable
    p is 2/2^n); the margin tests by a paired t over the tasks' differences (TOST)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = np.isfinite(a) & np.isfinite(b)
    diff = a[keep] - b[keep]
    n = len(diff)
    out = {"test": TASKS_TEST, "units": f"{n} task{'s' if n != 1 else ''}", "tasks": n, "difference": float(diff.mean()) if n else np.nan}
    if n == 0:
        return out | {"untestable": MISSING, "p (difference)": np.nan}
    nonzero = diff[diff != 0]
    if len(nonzero) == 0 and min_attainable_p(n) <= alpha:  # identical, where a difference could have shown
        p = 1.0
    elif min_attainable_p(max(len(nonzero), 1)) > alpha or len(nonzero) == 0:  # a difference is untestable; the margin tests still run
        p = np.nan
        k = len(nonzero) or n
        out["untestable gain"] = f"untestable at n={k} tasks (smallest possible p = {min_attainable_p(k):.3f})"
    else:
        p = float(stats.wilcoxon(diff).pvalue)
        ranks = stats.rankdata(np.abs(nonzero))
        if np.sign(ranks[nonzero > 0].sum() - ranks[nonzero < 0].sum()) != np.sign(diff.mean()):
            p = 1.0  # the signed ranks and the mean disagree: no direction is settled
    se = float(diff.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
    return _with_margin_tests(out | {"p (difference)": p}, se, float(n - 1), margin)


def decide(test: dict, expected: str, p: float | None = None, alpha: float = ALPHA) -> str:
    """The verdict of ``test`` (:func:`runs_test` or :func:`tasks_test`) for a claim expecting ``expected``, at
    ``p`` (the claim's p adjusted for multiplicity; default its raw :func:`claim_p`)."""
    _check(expected)
    if test.get("same model"):
        return SAME_MODEL
    if "untestable" in test:
        return test["untestable"]
    if expected in GAIN and "untestable gain" in test:
        return test["untestable gain"]
    if expected in NO_DIFFERENCE and not test.get("df", 0) > 0:
        return f"untestable at n={test.get('tasks')} (no margin test)"
    p = claim_p(test, expected) if p is None else p
    if pd.isna(p) or not p < alpha:
        return INCONCLUSIVE
    d, margin = test["difference"], test["margin"]
    if expected in GAIN:
        if abs(d) < margin:  # significant, either way, but smaller than the declared margin
            return BELOW_MARGIN
        return SUPPORTED if np.sign(d) == (1 if expected == "better" else -1) else CONTRADICTED
    within = test[f"p within margin ({expected})"]
    beyond = test[f"p beyond margin ({expected})"]
    return SUPPORTED if within <= beyond else CONTRADICTED


def margin_side(test: dict, expected: str) -> str:
    """For a no-difference claim, the side of the margin its p speaks for: "within" or "beyond"; "" otherwise."""
    if expected not in NO_DIFFERENCE or f"p within margin ({expected})" not in test:
        return ""
    return "within" if test[f"p within margin ({expected})"] <= test[f"p beyond margin ({expected})"] else "beyond"


def is_tested(verdict: str) -> bool:
    """Did a test decide ``verdict`` (so its p belongs to the multiplicity family)? A measurement (``measured: ...``)
    is shown, never counted as a test."""
    return not str(verdict).startswith(("untestable", "not testable", MISSING, "one run", "measured"))


def adjusted_verdict(verdict: str, expected: str, difference: float, side: str | None, p: float,
                     alpha: float = ALPHA, margin: float = MARGIN) -> str:
    """:func:`decide` again at ``p`` (a multiplicity-adjusted p) from a row's stored difference and margin side;
    a verdict no test decided stays as it is, and so does a disagreement of the signed ranks and the mean."""
    if not is_tested(verdict) or str(verdict).startswith("inconclusive (the mean"):
        return verdict
    if pd.isna(p) or not p < alpha:
        return INCONCLUSIVE
    if expected in GAIN:
        if abs(difference) < margin:
            return BELOW_MARGIN
        return SUPPORTED if np.sign(difference) == (1 if expected == "better" else -1) else CONTRADICTED
    return SUPPORTED if side == "within" else CONTRADICTED


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


def per_run_means(frame: pd.DataFrame, a, b, category: str | None = None) -> tuple[pd.Series, pd.Series, int]:
    """Per-run means of ``a`` and ``b`` over the category's tasks (None: every task) that every run of both has,
    from a long frame (model, seed, task, category, score; copies of one run counted once,
    :func:`distinct_runs`); and the number of those tasks. With a ``unit`` column, the runs of one unit (e.g. the
    stage-2 seeds that start from one stage 1) are one independent run, indexed by the unit."""
    part = frame if category is None else frame[frame["category"] == category]
    part = distinct_runs(part[part["model"].isin([a, b])])
    if "unit" in part:  # runs that share an upstream model are one run: their scores averaged per task
        part = part.groupby(["model", "unit", "task"], as_index=False, sort=False)["score"].mean().rename(
            columns={"unit": "seed"})
    runs = part.groupby(["model", "seed"])["task"].apply(set)
    if len(runs) == 0 or a not in runs.index.get_level_values(0) or b not in runs.index.get_level_values(0):
        return pd.Series(dtype=float), pd.Series(dtype=float), 0
    shared = set.intersection(*runs.tolist())
    part = part[part["task"].isin(shared)]
    means = part.groupby(["model", "seed"])["score"].mean()
    return means.loc[a], means.loc[b], len(shared)


def same_model(frame: pd.DataFrame, a, b) -> bool:
    """Are ``a`` and ``b`` one model: every run of either scores every task exactly as every other run (e.g. a
    stage 2 whose dev selection kept the stage-1 weights in every run, against that stage 1)?"""
    part = frame[frame["model"].isin([a, b])]
    wide = part.pivot_table(index="task", columns=["model", "seed"], values="score", aggfunc="first")
    if wide.empty or a not in wide.columns.get_level_values(0) or b not in wide.columns.get_level_values(0):
        return False
    values = wide.to_numpy()
    return bool(np.isfinite(values).all() and (values == values[:, :1]).all())


def run_comparison(frame: pd.DataFrame, a, b, category: str | None = None, margin: float = MARGIN) -> dict:
    """:func:`runs_test` of ``a`` vs ``b`` on the category's per-run means, with the tasks it used."""
    x, y, tasks = per_run_means(frame, a, b, category)
    test = runs_test(x.to_numpy(), y.to_numpy(), margin) | {"tasks": tasks}
    if len(x) and same_model(frame, a, b):
        test["same model"] = True
    return test


def ci_text(test: dict) -> str:
    """The test's 90% interval as "[low, high]" (empty where it has none)."""
    low, high = test.get("90% CI", (np.nan, np.nan))
    return f"[{low:.2f}, {high:.2f}]" if np.isfinite(low) else ""


def claim_test_name(test: dict, expected: str) -> str:
    """The name of the test a claim's p comes from (:func:`claim_p`): the difference's test for a gain claim; for a
    claim of no difference, the margin test whose p it is (:func:`margin_side`), on the same units (a paired t over
    tasks; a t on per-run means)."""
    if expected in GAIN or "p (difference)" not in test:
        return test["test"]
    units = ("paired t over tasks" if test["test"] == TASKS_TEST else
             "t of the runs against the fixed model" if "fixed" in test["test"] else "Welch t on per-run means")
    within = margin_side(test, expected) == "within"
    if expected == "equal":
        return TASKS_TOST + " (inside the margin)" if within and test["test"] == TASKS_TEST else (
            f"two one-sided tests, inside the margin ({units})" if within else
            f"one-sided test, beyond the margin ({units})")
    return (f"one-sided non-superiority test, below the margin ({units})" if within else
            f"one-sided test, above the margin ({units})")


def claim_row(claim: str, comparison: str, category: str, expected: str, test: dict, first, second,
              paired: int) -> dict:
    """One claim's row in the shared claims schema (what every claims module and page reads): the comparison, the
    two sides' means (``first``, ``second``: their values, NaN where absent), the test's difference, p, interval,
    units and margin side, and the verdict :func:`decide` gives at the raw p."""
    first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    return {"claim (paper)": claim, "comparison": comparison, "category": category, "expected": expected,
            "paired": paired, "mean first": first.mean() if first.size else np.nan,
            "mean second": second.mean() if second.size else np.nan, "difference": test["difference"],
            "p": claim_p(test, expected), "90% CI": ci_text(test), "test": claim_test_name(test, expected),
            "units": test["units"],
            "margin side": margin_side(test, expected), "verdict at our scale": decide(test, expected)}


def statement_verdict(verdicts: Iterable[str]) -> str:
    """One verdict for a paper statement from its comparisons' verdicts: supported if every comparison is,
    contradicted if any is, not testable if none could be tested, inconclusive otherwise."""
    verdicts = list(verdicts)
    if not verdicts:
        return MISSING
    if all(v == SUPPORTED for v in verdicts):
        return SUPPORTED
    if any(v == CONTRADICTED for v in verdicts):
        return CONTRADICTED
    if all(v == SAME_MODEL for v in verdicts):
        return SAME_MODEL
    if not any(is_tested(v) for v in verdicts):  # no comparison was tested: say why, in the first one's words
        return next((v.split(" (")[0] if v.startswith("one run") else v for v in verdicts if v != MISSING), MISSING)
    return INCONCLUSIVE
