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

**The margins** are declared per metric family (:data:`MARGINS`, by task category; :data:`STATISTIC_MARGINS` for
statistics that are not scores, each in its own unit, :data:`UNITS`; :data:`MARGIN`, 1 point x100, for a mean over
mixed categories); their reasons are stored beside them (:data:`MARGIN_REASONS`, :data:`STATISTIC_REASONS`) and shown with the run-to-run SDs measured on the stored runs in the glossary
(:func:`repro.crosspaper.margins.margins_table`). A margin is the smallest difference the papers themselves treat
as a finding for that metric, raised where the run-to-run noise here could not resolve it with 3-5 runs: retrieval's
nDCG@10 on capped corpora varies by 3-11 points between runs of one design, so its margin is 2 points. A claim whose
published effect is below its margin is *below the book's resolution*, not a failed test.

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
from scipy import special, stats  # special.stdtr/stdtrit: the t CDF and quantile as ufuncs (fast)

from repro.core.stats import FIRST_BETTER, NOT_SIGNIFICANT, SECOND_BETTER, SIGNIFICANT, UNSETTLED, min_attainable_p  # noqa: F401  (the paired tests' words, re-exported: the engine's vocabulary)
from repro.verdicts.margins import (  # noqa: F401  (re-exported: the engine's margins, where the rule is read)
    MARGIN,
    MARGIN_REASONS,
    MARGINS,
    METRICS,
    SHORT_UNITS,
    STATISTIC_MARGINS,
    STATISTIC_REASONS,
    UNITS,
    margin_for,
    unit_of,
)

ALPHA = 0.05
POWER = 0.8  # the power a detectable effect is stated at

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
# a one-sided "not better" claim whose difference is significantly beyond the margin the other way: supported, but
# not the parity the paper's wording may suggest (the 90% interval lies wholly below -margin)
WORSE = "supported, worse by"


def is_supported(verdict: str) -> bool:
    """Is ``verdict`` a supported one (plain, or "supported, worse by X")?"""
    return str(verdict).startswith(SUPPORTED)


def base_verdict(verdict: str) -> str:
    """``verdict`` without its qualifiers ("supported, worse by 7.2", "contradicted (Clustering on 1 task)" ->
    "supported", "contradicted"), for counting."""
    return next((v for v in (SUPPORTED, CONTRADICTED, BELOW_MARGIN, INCONCLUSIVE) if str(verdict).startswith(v)),
                verdict)


def _worse_by(test: dict) -> str:
    """For a supported "no gain" claim: "supported, worse by X" when the 90% interval lies below -margin, else
    plain supported."""
    high = test.get("90% CI", (np.nan, np.nan))[1]
    return f"{WORSE} {abs(test['difference']):.1f}" if high < -test["margin"] else SUPPORTED


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
    above_low = special.stdtr(df, -((difference + margin) / se))  # H0: d <= -margin
    below_high = special.stdtr(df, (difference - margin) / se)  # H0: d >= +margin
    beyond_high = special.stdtr(df, -((difference - margin) / se))  # H0: d <= +margin
    beyond_low = special.stdtr(df, (difference + margin) / se)  # H0: d >= -margin
    return float(max(above_low, below_high)), float(min(beyond_high, beyond_low))


def _no_gain_p(difference: float, se: float, df: float, margin: float) -> tuple[float, float]:
    """(p that the difference is below +margin, p that it is above it): the one-sided non-superiority test."""
    if not se > 0 or not np.isfinite(se):
        return (0.0, 1.0) if difference < margin else (1.0, 0.0)
    return float(special.stdtr(df, (difference - margin) / se)), float(special.stdtr(df, -((difference - margin) / se)))


def claim_p(test: dict, expected: str) -> float:
    """The one p-value a claim's verdict rests on (the one the ledger adjusts): the two-sided p of the difference
    for a gain claim; for a no-difference claim the smaller of the p within and the p beyond the margin (only
    one of them can be below 0.5)."""
    _check(expected)
    if expected in GAIN:
        return test.get("p (difference)", np.nan)
    within, beyond = test.get(f"p within margin ({expected})", np.nan), test.get(f"p beyond margin ({expected})", np.nan)
    return float(np.nanmin([within, beyond])) if not (pd.isna(within) and pd.isna(beyond)) else np.nan


def with_margin_tests(out: dict, se: float, df: float, margin: float) -> dict:
    d = out["difference"]
    within, beyond = _margin_p(d, se, df, margin)
    ng_within, ng_beyond = _no_gain_p(d, se, df, margin)
    t90 = special.stdtrit(df, 0.95) if df > 0 else np.nan
    t95 = special.stdtrit(df, 0.975) if df > 0 else np.nan
    return out | {"se": se, "df": df, "90% CI": (d - t90 * se, d + t90 * se), "95% CI": (d - t95 * se, d + t95 * se),
                  "p within margin (equal)": within, "p beyond margin (equal)": beyond,
                  "p within margin (no gain)": ng_within, "p beyond margin (no gain)": ng_beyond, "margin": margin}


def detectable_effect(se: float, df: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest true difference a two-sided test at ``alpha`` detects with probability ``power``, for a
    difference with standard error ``se`` on ``df`` degrees of freedom (the t approximation)."""
    if not (se > 0 and df > 0 and np.isfinite(se)):
        return np.nan
    return float((special.stdtrit(df, 1 - alpha / 2) + special.stdtrit(df, power)) * se)


def units_needed(sd_first: float, sd_second: float, effect: float, alpha: float = ALPHA, power: float = POWER,
                 most: int = 1000) -> float:
    """Units a side (runs; for a paired or one-sample design, ``sd_second`` 0, its units) that a test of a
    difference with these per-unit SDs needs to detect ``effect`` at ``alpha`` with ``power`` (Welch's degrees of
    freedom); NaN where no spread was measured, inf beyond ``most``."""
    va, vb = float(sd_first) ** 2, float(sd_second) ** 2
    if not np.isfinite(va + vb) or va + vb <= 0 or not effect > 0:
        return np.nan
    # the normal approximation is a lower bound (t quantiles exceed z's): start there and step up
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    for n in range(max(2, int(np.ceil(z ** 2 * (va + vb) / effect ** 2))), most + 1):
        se = np.sqrt((va + vb) / n)
        df = (va + vb) ** 2 / ((va ** 2 + vb ** 2) / (n - 1))
        if detectable_effect(se, df, alpha, power) <= effect:
            return float(n)
    return np.inf


def with_power(out: dict, sd_first: float, sd_second: float, margin: float) -> dict:
    """``out`` plus what a test of its size could detect: the effect detectable at :data:`POWER` with the units it
    has, and the units a side that twice the margin would need, from the measured spreads."""
    return out | {"SD first": sd_first, "SD second": sd_second,
                  f"detectable at {POWER:.0%} power": detectable_effect(out.get("se", np.nan), out.get("df", np.nan)),
                  "units a side for 2x margin": units_needed(sd_first, sd_second, 2 * margin)}


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
        tested = with_margin_tests(out | {"test": "one-sample t-test of the runs against one fixed model",
                                           "units": f"{len(x)} runs vs one fixed model", "p (difference)": p},
                                    se, float(len(x) - 1), margin)
        return with_power(tested, float(x.std(ddof=1)), 0.0, margin)
    sds = [float(v.std(ddof=1)) if len(v) > 1 else np.nan for v in (x, y)]
    if len(x) < MIN_RUNS or len(y) < MIN_RUNS:
        why = MISSING if not (len(x) and len(y)) else ONE_RUN if min(len(x), len(y)) == 1 else few_runs(len(x), len(y))
        return with_power(out | {"untestable": why, "p (difference)": np.nan, "margin": margin}, *sds, margin)
    va, vb = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se = float(np.sqrt(va + vb))
    if se == 0:  # every run of each side identical: an exact difference
        df = float(len(x) + len(y) - 2)
        p = 1.0 if out["difference"] == 0 else 0.0
    else:
        df = float((va + vb) ** 2 / (va ** 2 / (len(x) - 1) + vb ** 2 / (len(y) - 1))) if va + vb > 0 else np.inf
        p = float(stats.ttest_ind(x, y, equal_var=False).pvalue)
    return with_power(with_margin_tests(out | {"p (difference)": p}, se, df, margin), *sds, margin)


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
    tested = with_margin_tests(out | {"p (difference)": p}, se, float(n - 1), margin)
    return with_power(tested, float(diff.std(ddof=1)) if n > 1 else np.nan, 0.0, margin)


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
    if within > beyond:
        return CONTRADICTED
    return _worse_by(test) if expected == "no gain" else SUPPORTED


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
    if side != "within":
        return CONTRADICTED
    return verdict if str(verdict).startswith(WORSE) else SUPPORTED


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
    return {"statement": claim, "comparison": comparison, "category": category, "expected": expected,
            "paired": paired, "mean first": first.mean() if first.size else np.nan,
            "mean second": second.mean() if second.size else np.nan, "difference": test["difference"],
            "p": claim_p(test, expected), "90% CI": ci_text(test), "test": claim_test_name(test, expected),
            "units": test["units"], "margin": test.get("margin", np.nan),
            "detectable (80% power)": test.get(f"detectable at {POWER:.0%} power", np.nan),
            "units a side for 2x margin": test.get("units a side for 2x margin", np.nan),
            "margin side": margin_side(test, expected), "verdict": decide(test, expected)}


def statement_verdict(verdicts: Iterable[str]) -> str:
    """One verdict for a paper statement from its comparisons' verdicts: supported if every comparison is,
    contradicted if any is, not testable if none could be tested, inconclusive otherwise."""
    verdicts = list(verdicts)
    if not verdicts:
        return MISSING
    if all(is_supported(v) for v in verdicts):
        worse = sorted(float(v.rsplit(" ", 1)[1]) for v in verdicts if str(v).startswith(WORSE))
        if not worse:
            return SUPPORTED
        amount = f"{worse[0]:.1f}" if worse[0] == worse[-1] else f"{worse[0]:.1f} to {worse[-1]:.1f}"
        return (f"{WORSE} {amount}" if len(worse) == len(verdicts) else
                f"{SUPPORTED} ({len(worse)} of {len(verdicts)} comparisons worse by {amount})")
    if any(v == CONTRADICTED for v in verdicts):
        return CONTRADICTED
    if all(v == SAME_MODEL for v in verdicts):
        return SAME_MODEL
    if not any(is_tested(v) for v in verdicts):  # no comparison was tested: say why, in the first one's words
        return next((v.split(" (")[0] if v.startswith("one run") else v for v in verdicts if v != MISSING), MISSING)
    return INCONCLUSIVE
