"""Paired comparisons of models over datasets, as in Tang & Yang's Tables 2-5.

Per-task scores (x100, subsets averaged) in a wide table; each comparison is the two-sided Wilcoxon
signed-rank test over the datasets of a category (p < 0.05, the paper's test) and a paired bootstrap CI
of the mean difference over the same datasets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from repro.core.stats import UNSETTLED, min_attainable_p, paired_bootstrap_mean, wilcoxon_over_tasks
from repro.verdicts.rule import (
    EXPECTATIONS,
    POWER,
    ci_text,
    claim_p,
    claim_test_name,
    decide,
    margin_for,
    margin_side,
    tasks_test,
)


def per_task_scores(scores: pd.DataFrame, column: str = "model") -> pd.DataFrame:
    """rows (category, task) x columns ``column``: main score x100, a task's subsets averaged."""
    per_task = scores.groupby([column, "category", "task"], as_index=False)["main_score"].mean()
    per_task["score"] = per_task["main_score"] * 100
    return per_task.pivot_table(index=["category", "task"], columns=column, values="score")


def compare(wide: pd.DataFrame, a, b, category: str | None = None) -> dict:
    part = wide if category is None else wide.loc[[category]] if category in wide.index.get_level_values(0) else wide.iloc[:0]
    if a not in part or b not in part:
        return {"tasks": 0, "verdict": "missing results"}
    part = part[[a, b]].dropna()  # every number below on the tasks both models have
    w = wilcoxon_over_tasks(part[a], part[b])
    boot = paired_bootstrap_mean(part[a], part[b])
    return {"tasks": w["n"], f"mean {a}": part[a].mean(), f"mean {b}": part[b].mean(),
            "difference": w["mean_difference"], "p (Wilcoxon)": w["p"],
            "95% CI (bootstrap)": f"[{boot['ci_low']:.2f}, {boot['ci_high']:.2f}]",
            "significant": bool(w["p"] == w["p"] and w["p"] < 0.05 and w["min_attainable_p"] <= 0.05),
            "verdict": w["verdict"].replace("first", str(a)).replace("second", str(b))}


def comparison_table(wide: pd.DataFrame, pairs: Sequence[tuple], categories: Iterable[str | None]) -> pd.DataFrame:
    rows = []
    for a, b in pairs:
        for category in categories:
            result = compare(wide, a, b, category)
            rows.append({"comparison": f"{a} vs {b}", "category": category or "all tasks",
                         "tasks": result.get("tasks", 0),
                         "mean first": result.get(f"mean {a}"), "mean second": result.get(f"mean {b}"),
                         "difference": result.get("difference"), "p (Wilcoxon)": result.get("p (Wilcoxon)"),
                         "95% CI (bootstrap)": result.get("95% CI (bootstrap)"), "verdict": result["verdict"]})
    return pd.DataFrame(rows)


def category_means(wide: pd.DataFrame) -> pd.DataFrame:
    """Mean per category and over all tasks, one column per model (the shape of Table 4)."""
    means = wide.groupby(level=0).mean().T
    means["all tasks"] = wide.mean()
    means["tasks"] = len(wide)
    return means


def ranking_agreement(first: pd.DataFrame, second: pd.DataFrame, categories: Iterable[str | None]) -> pd.DataFrame:
    """Do two backbones rank the models alike? Per category, Kendall's tau between the models' mean scores on
    the tasks both have (n = the number of models: with 5 models only a perfect agreement can reach p < 0.05,
    :func:`kendall_reach`)."""
    rows = []
    models = [m for m in first.columns if m in second.columns]
    for category in categories:
        a, b = (w if category is None else w.loc[[category]] if category in w.index.get_level_values(0) else w.iloc[:0]
                for w in (first, second))
        tasks = a.index.intersection(b.index)
        if len(tasks) == 0 or len(models) < 3:
            rows.append({"category": category or "all tasks", "tasks": len(tasks), "models": len(models),
                         "verdict": "missing results"})
            continue
        mean_a, mean_b = a.loc[tasks, models].mean(), b.loc[tasks, models].mean()
        tau, p = kendalltau(mean_a, mean_b)
        rows.append({"category": category or "all tasks", "tasks": len(tasks), "models": len(models),
                     "order (first)": " > ".join(map(str, mean_a.sort_values(ascending=False).index)),
                     "order (second)": " > ".join(map(str, mean_b.sort_values(ascending=False).index)),
                     "Kendall tau": tau, "p": p,
                     "verdict": ("not significantly alike" if not p < 0.05 else
                                 "same ranking (significant)" if tau > 0 else "reversed ranking (significant)")})
    return pd.DataFrame(rows)


def kendall_reach(n: int, alpha: float = 0.05) -> str:
    """A sentence for a page: which Kendall tau between two rankings of ``n`` items can reach p < ``alpha`` (the
    exact two-sided p of scipy.stats.kendalltau for a perfect order and for one adjacent swap)."""
    if n < 3:
        return f"With {n} items no Kendall tau can be tested."
    order = list(range(n))
    swapped = order[:-2] + [order[-1], order[-2]]
    perfect, near = kendalltau(order, order), kendalltau(order, swapped)
    reach = "only a perfect agreement" if near.pvalue >= alpha else "a near-perfect order"
    return (f"With {n} items, tau = {perfect.statistic:.0f} gives p = {perfect.pvalue:.3f} and one adjacent swap "
            f"(tau = {near.statistic:.2f}) p = {near.pvalue:.3f}: {reach} can reach p < {alpha}, so \"not "
            "significantly alike\" is weak evidence.")


def wilcoxon_reach(task_counts: dict, alpha: float = 0.05) -> str:
    """A sentence for a page: which categories (name -> paired tasks) a two-sided Wilcoxon over tasks can find
    significant at all (the smallest attainable p with n tasks is 2/2^n, so n >= 6 at 0.05) and which it cannot,
    whatever the scores."""
    can = [f"{c} ({n} tasks)" for c, n in task_counts.items() if min_attainable_p(n) <= alpha]
    cannot = [f"{c} ({n} task{'s' if n != 1 else ''}, smallest possible p {min_attainable_p(n):.3g})"
              for c, n in task_counts.items() if min_attainable_p(n) > alpha]
    parts = [f"A two-sided Wilcoxon over n tasks cannot give p below 2/2^n, so only a category with at least "
             f"{next(n for n in range(1, 64) if min_attainable_p(n) <= alpha)} tasks can reach p < {alpha}."]
    if can:
        parts.append(f"Testable over tasks here: {', '.join(can)}.")
    if cannot:
        parts.append(f"Untestable over tasks here, whatever the scores: {', '.join(cannot)}; their statements are "
                     "'untestable', and the paired tests inside each task are the evidence for them.")
    return " ".join(parts)


DISAGREE = "inconclusive (the mean difference and the signed ranks disagree)"


def claim_verdict(wide: pd.DataFrame, claim: str, a, b, category: str | None = None, expected: str = "better") -> dict:
    """A paper's claim about deterministic methods ``a`` vs ``b`` in ``category`` (None: every row of ``wide``),
    judged by :mod:`repro.verdicts.rule` with the tasks as units: the Wilcoxon over tasks for a gain ("better",
    "worse"), the paired t TOST over tasks against the declared margin for "no gain" and "equal". Trained methods
    are judged with their runs as units instead (:func:`repro.verdicts.seeds.seeded_claims`). A significant Wilcoxon
    whose mean difference has not the sign of its signed ranks settles no direction: :data:`DISAGREE`."""
    if expected not in EXPECTATIONS:
        raise ValueError(f"unknown expectation '{expected}'; valid: {', '.join(EXPECTATIONS)}")
    row = comparison_table(wide, [(a, b)], [category]).iloc[0]
    part = wide if category is None else wide.loc[[category]] if category in wide.index.get_level_values(0) else wide.iloc[:0]
    test = tasks_test(part[a], part[b], margin_for(category)) if a in part and b in part else {
        "untestable": "missing results", "difference": np.nan}
    verdict = decide(test, expected)
    if row["verdict"] == UNSETTLED and expected in ("better", "worse"):
        verdict = DISAGREE
    interval = "n/a (too few paired units)" if str(verdict).startswith("untestable") else row["95% CI (bootstrap)"]
    return {"statement": claim, "comparison": row["comparison"], "category": row["category"],
            "expected": expected, "paired": row["tasks"], "mean first": row["mean first"], "mean second": row["mean second"],
            "difference": row["difference"], "p (Wilcoxon)": row["p (Wilcoxon)"], "p": claim_p(test, expected),
            "90% CI": ci_text(test),
            "95% CI (bootstrap)": interval, "test": claim_test_name(test, expected) if "test" in test else "",
            "units": test.get("units", ""), "margin": test.get("margin", margin_for(category)),
            "detectable (80% power)": test.get(f"detectable at {POWER:.0%} power", np.nan),
            "units a side for 2x margin": test.get("units a side for 2x margin", np.nan),
            "margin side": margin_side(test, expected), "verdict": verdict, "_test": test}


def claims_table(wide: pd.DataFrame, claims: Iterable[tuple]) -> pd.DataFrame:
    """One :func:`claim_verdict` row per ``(claim, a, b, category, expected)``."""
    return pd.DataFrame([claim_verdict(wide, *claim) for claim in claims]).drop(columns="_test", errors="ignore")
