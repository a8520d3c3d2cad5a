"""Ranking many methods on the same tasks: the Friedman test over tasks and every pair tested with Holm's
correction (Demsar 2006), with each pair's units chosen as the verdict engine chooses them.

A long frame holds one row per (method, seed, task) with ``score``; a deterministic method has ``seed`` NaN (one
set of scores, no run noise), a trained method one seed per training run. A pair of

* two trained methods with at least 2 runs each is tested on their per-run means (Welch, runs as units);
* a trained method and a deterministic one: a one-sample t-test of the runs' means against the fixed method's;
* two deterministic methods: the Wilcoxon signed-rank over tasks;
* a method with one training run: no test (its run-to-run noise is unknown).

Holm's step-down correction runs over every tested pair as one family (statsmodels ``multipletests``). Two methods
whose adjusted p is not below alpha are "not separated", never "tied".
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy.stats import friedmanchisquare

from repro.verdicts.multiplicity import holm
from repro.verdicts.rule import ALPHA, runs_test, tasks_test
from repro.verdicts.run_units import distinct_runs

NOT_SEPARATED = "not separated"
UNTESTED = "untested (one training run)"


def _runs(frame: pd.DataFrame, method) -> np.ndarray:
    part = frame[frame["method"] == method]
    if part["seed"].isna().all():
        return np.array([])
    return distinct_runs(part, key="method").groupby("seed")["score"].mean().to_numpy()


def pair_test(frame: pd.DataFrame, a, b) -> dict:
    """The test of ``a`` against ``b`` on the tasks both have (every run of each): the difference of their
    means and the two-sided p, with the units used; p NaN where no test is possible."""
    tasks = set.intersection(*(set(g["task"]) for _, g in frame[frame["method"].isin([a, b])].groupby(
        ["method", frame["seed"].fillna(-1)])))
    part = frame[frame["method"].isin([a, b]) & frame["task"].isin(tasks)]
    x, y = _runs(part, a), _runs(part, b)
    fixed_a = part.loc[part["method"] == a, "seed"].isna().all()
    fixed_b = part.loc[part["method"] == b, "seed"].isna().all()
    if fixed_a and fixed_b:
        wide = part.pivot_table(index="task", columns="method", values="score")
        test = tasks_test(wide[a], wide[b])
    elif fixed_b and len(x) >= 2:
        test = runs_test(x, [part.loc[part["method"] == b, "score"].mean()], fixed=True)
    elif fixed_a and len(y) >= 2:
        test = runs_test(y, [part.loc[part["method"] == a, "score"].mean()], fixed=True)
        test = test | {"difference": -test["difference"]}
    else:
        test = runs_test(x, y)
    p = test.get("p (difference)", np.nan)
    mean_a = part.loc[part["method"] == a, "score"].mean()
    mean_b = part.loc[part["method"] == b, "score"].mean()
    return {"first": a, "second": b, "tasks": len(tasks), "difference": mean_a - mean_b, "test": test["test"],
            "units": test.get("units", ""), "p": p}


def all_pairs(frame: pd.DataFrame, methods: list | None = None, alpha: float = ALPHA) -> pd.DataFrame:
    """Every pair of ``methods`` (default: all in ``frame``) tested (:func:`pair_test`), Holm-adjusted over the
    tested pairs, with an outcome: "first above" / "second above" / :data:`NOT_SEPARATED` / "untested"."""
    methods = list(dict.fromkeys(frame["method"])) if methods is None else list(methods)
    rows = pd.DataFrame([pair_test(frame, a, b) for a, b in combinations(methods, 2)])
    if rows.empty:
        return rows
    tested = rows["p"].notna()
    rows["p (Holm)"] = np.nan
    if tested.any():
        rows.loc[tested, "p (Holm)"] = holm(rows.loc[tested, "p"])
    rows["outcome"] = [UNTESTED if pd.isna(q) else NOT_SEPARATED if q >= alpha else
                       "first above" if d > 0 else "second above" for q, d in zip(rows["p (Holm)"], rows["difference"])]
    return rows


def friedman(frame: pd.DataFrame, methods: list) -> dict:
    """Friedman's test over the tasks every method has (each method's seed-averaged score per task; blocks =
    tasks): does the ranking differ from chance at all?"""
    wide = frame[frame["method"].isin(methods)].pivot_table(index="task", columns="method", values="score").dropna()
    if wide.shape[1] < 3 or len(wide) < 2:
        return {"methods": wide.shape[1], "tasks": len(wide), "statistic": np.nan, "p": np.nan}
    statistic, p = friedmanchisquare(*(wide[m].to_numpy() for m in wide.columns))
    return {"methods": wide.shape[1], "tasks": len(wide), "statistic": float(statistic), "p": float(p)}


def rank_ranges(ranks) -> str:
    """Rank numbers as short runs: [2, 3, 4, 5, 8, 10, 11, 12, 14] -> "2-5, 8, 10-12, 14" (a table column stays
    narrow)."""
    runs: list[list[int]] = []
    for r in sorted(set(ranks)):
        if runs and r == runs[-1][-1] + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)) for run in runs)


def separated_from(pairs: pd.DataFrame, order: list) -> pd.DataFrame:
    """Per method in rank ``order``: the ranks it is significantly above and those it is not separated from
    (Holm-adjusted pairs of :func:`all_pairs`), as short lists of rank numbers (runs as ranges, :func:`rank_ranges`); :data:`UNTESTED` for a method no
    pair could test (one training run)."""
    rank = {m: i + 1 for i, m in enumerate(order)}
    above = {m: [] for m in order}
    unseparated = {m: [] for m in order}
    tested: dict = {}
    for r in pairs.itertuples():
        if r.first not in rank or r.second not in rank:
            continue
        tested.update({r.first: tested.get(r.first, False) or r.outcome != UNTESTED,
                       r.second: tested.get(r.second, False) or r.outcome != UNTESTED})
        if r.outcome == "first above":
            above[r.first].append(rank[r.second])
        elif r.outcome == "second above":
            above[r.second].append(rank[r.first])
        elif r.outcome == NOT_SEPARATED:
            unseparated[r.first].append(rank[r.second])
            unseparated[r.second].append(rank[r.first])

    def spans(method, ranks):
        return UNTESTED if not tested.get(method) else rank_ranges(ranks) if ranks else "-"

    return pd.DataFrame({"rank": [rank[m] for m in order], "above (Holm)": [spans(m, above[m]) for m in order],
                         "not separated from": [spans(m, unseparated[m]) for m in order]}, index=order)
