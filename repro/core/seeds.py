"""Verdicts over training seeds: the seed spread, seed-averaged scores, claims held to that spread, and the paired
tests inside each task at a shared seed.

Frames are long: one row per (model, seed, task) with ``category`` and ``score`` (x100). A claim's difference
smaller than the larger spread of its two models is **inconclusive**, never supported or contradicted (except a
"no gain" claim that holds: a difference within the spread is what it predicts). The in-task tests read the
stored per-task records keyed ``(model, seed, task)``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from repro.core.comparison import claim_verdict
from repro.core.paired import lacks_units, paired_test
from repro.core.tasks import TASKS


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


TESTED = ("supported", "contradicted", "not supported (no significant difference)")
ONE_SEED = " (one seed: spread unknown)"


def one_seed(claims: pd.DataFrame) -> pd.DataFrame:
    """A claims table computed from one training seed, each tested verdict marked as such (the spread, and so
    whether the difference exceeds it, is unknown)."""
    if claims.empty or "verdict at our scale" not in claims:  # no statement to mark (e.g. an empty grid)
        return claims
    claims = claims.copy()
    verdicts = claims["verdict at our scale"]
    claims["verdict at our scale"] = verdicts.where(~verdicts.isin(TESTED), verdicts + ONE_SEED)
    return claims


WITHIN = "inconclusive (within the seed spread)"


def _held(verdict: str, difference, expected: str, spread: float) -> str:
    """One tested verdict held to ``spread``: within it, inconclusive (a "no gain" claim that holds excepted)."""
    if verdict not in TESTED or (expected == "no gain" and verdict == "supported"):
        return verdict
    return WITHIN if difference is not None and not pd.isna(difference) and abs(difference) < spread else verdict


def held_to_spread(claims: pd.DataFrame, spread: float) -> pd.DataFrame:
    """A claims table from one training seed per model, held to a seed ``spread`` measured at the same scale
    elsewhere (e.g. Paper 3's data-efficiency curve): each tested difference smaller than it is "inconclusive
    (within the seed spread)", as in :func:`seeded_claims`; NaN (no measurement): :func:`one_seed`."""
    if spread is None or pd.isna(spread) or claims.empty or "verdict at our scale" not in claims:
        return one_seed(claims)
    claims = claims.copy()
    claims["seed spread"] = float(spread)
    claims["verdict at our scale"] = [_held(v, d, e, spread) for v, d, e in zip(
        claims["verdict at our scale"], claims["difference"], claims["expected"])]
    return claims


def seeded_claims(frame: pd.DataFrame, claims: Iterable[tuple]) -> pd.DataFrame:
    """Each ``(claim, a, b, category, expected)`` judged on seed-averaged scores (:func:`claim_verdict`, the
    Wilcoxon over tasks), then held to the seed spread: a difference smaller than the larger of the two models'
    spreads is "inconclusive (within the seed spread)", and a verdict from one seed says so. A "no gain" claim
    supported (no significant gain) stays supported whatever its difference: a difference within the spread is
    what it predicts. ``seeds``: the fewer of the two models' seed counts; ``seeds (first/second)``: both."""
    wide, spread = seed_averaged(frame), seed_spread(frame)
    rows = []
    for claim in claims:
        _, a, b, category, expected = claim
        row = claim_verdict(wide, *claim)
        column = category or "all tasks"
        spreads = [spread.loc[m, column] if m in spread.index and column in spread else np.nan for m in (a, b)]
        counts = [int(spread.loc[m, "seeds"]) if m in spread.index else 0 for m in (a, b)]
        row["seeds"], row["seeds (first/second)"] = min(counts), "/".join(map(str, counts))
        row["seed spread"] = float(np.nanmax(spreads)) if not np.all(np.isnan(spreads)) else np.nan
        verdict = row["verdict at our scale"]
        if verdict in TESTED and min(counts) < 2:
            row["verdict at our scale"] += ONE_SEED
        elif not pd.isna(row["seed spread"]):
            row["verdict at our scale"] = _held(verdict, row["difference"], expected, row["seed spread"])
        rows.append(row)
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
