"""The multiplicity corrections, in one place: Benjamini–Hochberg over a family of tests (the claims ledger's every
current comparison: :func:`with_adjusted_p`), counting each distinct test once, and Holm's step-down within a group
of tests (the comparisons of one statement: :func:`holm_within`; the pairs of a ranking,
:mod:`repro.verdicts.ranking`). Both take the row vocabulary they are given (``names``): the claims modules' rows
("verdict at our scale", "difference", "category", "paired") by default, the ledger's ("verdict", "ours", "scale",
"statistic") when it calls them, so no frame is renamed back and forth."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import false_discovery_control
from statsmodels.stats.multitest import multipletests

from repro.verdicts.rule import MARGIN, adjusted_verdict, is_tested

CLAIM_NAMES = {"verdict": "verdict at our scale", "difference": "difference", "comparison": "comparison",
               "category": "category", "paired": "paired", "adjusted": "p (BH-adjusted)"}


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (statsmodels ``multipletests``)."""
    return multipletests(np.asarray(p_values, dtype=float), method="holm")[1]


def holm_within(rows: pd.DataFrame, groups: list, column: str = "p (Holm in statement)",
                verdict: str = "verdict") -> pd.DataFrame:
    """``rows`` plus ``column``: Holm's adjustment of the raw p over the tested rows of each group (``groups``: the
    keys to group by, e.g. the paper and the statement)."""
    out = rows.assign(**{column: float("nan")})
    tested = out[verdict].map(is_tested) & out["p"].notna()
    for _, part in out[tested].groupby([g[tested] if isinstance(g, pd.Series) else g for g in groups], sort=False):
        out.loc[part.index, column] = holm(part["p"].astype(float))
    return out


def _test_keys(rows: pd.DataFrame, column: str = "p", names: dict = CLAIM_NAMES) -> list[tuple] | None:
    """One key per row naming the test it reads: the two compared models in either order, the category, the
    paired units, the p-value and the size of the difference (rows of different pages or scales that compare the
    same models differ in these); None without a comparison and a category to key on."""
    comparison, category, difference, paired = (names[k] for k in ("comparison", "category", "difference", "paired"))
    if not {comparison, category} <= set(rows):
        return None
    size = rows[difference].abs().round(9) if difference in rows else pd.Series(0.0, index=rows.index)
    units = rows[paired] if paired in rows else pd.Series(0, index=rows.index)
    return [(tuple(sorted(str(c).split(" vs "))), str(cat), n, round(float(p), 12), d)
            for c, cat, n, p, d in zip(rows[comparison], rows[category], units, rows[column], size)]


def _margin(row) -> float:
    """A row's declared margin: its own ``margin`` (a statistic that is not a score, e.g. a correlation, declares
    0), else the engine's :data:`repro.verdicts.rule.MARGIN`."""
    margin = row.get("margin", np.nan)
    return MARGIN if margin is None or pd.isna(margin) else float(margin)


def with_adjusted_p(claims: pd.DataFrame, names: dict | None = None) -> pd.DataFrame:
    """``claims`` plus "p (BH-adjusted)": Benjamini-Hochberg false-discovery-rate adjusted p-values
    (scipy.stats.false_discovery_control) over the distinct tests the rows read (not untestable, missing or a model
    against itself), and each tested row's verdict decided again at its adjusted p
    (:func:`repro.verdicts.rule.adjusted_verdict`). Statements that read one test (the same two models, category,
    units and result, e.g. "a better than b" and "b no gain over a") count it once and share its adjusted p.
    ``names``: the rows' column names where they are not the claim rows' (:data:`CLAIM_NAMES`)."""
    names = CLAIM_NAMES | (names or {})
    verdict, difference, column_adjusted = names["verdict"], names["difference"], names["adjusted"]
    out = claims.copy()
    column = "p" if "p" in out else "p (Wilcoxon)"
    tested = out[verdict].map(is_tested) & out[column].notna()
    out[column_adjusted] = np.nan
    if tested.any():
        rows = out.loc[tested]
        keys = _test_keys(rows, column, names) or list(range(len(rows)))
        tests = dict(zip(keys, rows[column].astype(float)))  # one p per distinct test
        adjusted = dict(zip(tests, false_discovery_control(list(tests.values()))))
        out.loc[tested, column_adjusted] = [adjusted[k] for k in keys]
        if {"expected", difference} <= set(out):
            out.loc[tested, verdict] = [
                adjusted_verdict(r[verdict], r["expected"], r[difference], r.get("margin side"),
                                 r[column_adjusted], margin=_margin(r)) for _, r in out.loc[tested].iterrows()]
    return out
