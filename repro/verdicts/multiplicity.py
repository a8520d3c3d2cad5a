"""The multiplicity corrections, in one place: Benjamini–Hochberg over a family of tests (the claims ledger's every
current comparison: :func:`with_adjusted_p`), counting each distinct test once, and Holm's step-down within a group
of tests (the comparisons of one statement: :func:`holm_within`; the pairs of a ranking,
:mod:`repro.verdicts.ranking`). Both read the one claim-row schema (:func:`repro.verdicts.rule.claim_row`:
"verdict", "difference", "comparison", "category", "paired", "p"), which the claims ledger's rows share."""

from __future__ import annotations

import gc
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import false_discovery_control
from statsmodels.stats.multitest import multipletests

from repro.verdicts.rule import MARGIN, adjusted_verdict, is_tested

ADJUSTED = "p (BH)"  # the Benjamini-Hochberg adjusted p, on the claims tables and the ledger alike


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (statsmodels ``multipletests``). Its Holm branch ends with a full
    ``gc.collect()``, which walks the whole heap (0.3 s a call beside a built ledger, 22 calls a ledger); the heap's
    objects are frozen around the call, so the collection skips them (:func:`gc.freeze`) and the p-values are the
    same."""
    gc.freeze()
    try:
        return multipletests(np.asarray(p_values, dtype=float), method="holm")[1]
    finally:
        gc.unfreeze()


def holm_within(rows: pd.DataFrame, groups: list, column: str = "p (Holm in statement)",
                verdict: str = "verdict") -> pd.DataFrame:
    """``rows`` plus ``column``: Holm's adjustment of the raw p over the tested rows of each group (``groups``: the
    keys to group by, e.g. the paper and the statement)."""
    out = rows.assign(**{column: float("nan")})
    tested = out[verdict].map(is_tested) & out["p"].notna()
    for _, part in out[tested].groupby([g[tested] if isinstance(g, pd.Series) else g for g in groups], sort=False):
        out.loc[part.index, column] = holm(part["p"].astype(float))
    return out


def _test_keys(rows: pd.DataFrame, column: str = "p", within: Sequence[str] = ()) -> list[tuple] | None:
    """One key per row naming the test it reads: the two compared models in either order, the category, the
    paired units, the p-value and the size of the difference (rows of different pages or scales that compare the
    same models differ in these), and the ``within`` columns (the ledger's scale and statistic); None without a
    comparison to key on (a row without a category or paired units keys on the rest)."""
    if "comparison" not in rows:
        return None
    category = rows["category"] if "category" in rows else pd.Series("", index=rows.index)
    size = pd.to_numeric(rows["difference"], errors="coerce").abs().round(9) if "difference" in rows else \
        pd.Series(0.0, index=rows.index)
    units = rows["paired"] if "paired" in rows else pd.Series(0, index=rows.index)
    extra = list(zip(*(rows[c].astype(str) for c in within))) if within else [()] * len(rows)
    return [(tuple(sorted(str(c).split(" vs "))), str(cat), str(n), round(float(p), 12), d, *e)
            for c, cat, n, p, d, e in zip(rows["comparison"], category, units, rows[column], size, extra)]


def _margin(row) -> float:
    """A row's declared margin: its own ``margin`` (a statistic that is not a score, e.g. a correlation, declares
    0), else the engine's :data:`repro.verdicts.rule.MARGIN`."""
    margin = row.get("margin", np.nan)
    return MARGIN if margin is None or pd.isna(margin) else float(margin)


def with_adjusted_p(claims: pd.DataFrame, within: Sequence[str] = ()) -> pd.DataFrame:
    """``claims`` plus "p (BH)": Benjamini-Hochberg false-discovery-rate adjusted p-values
    (scipy.stats.false_discovery_control) over the distinct tests the rows read (not untestable, missing or a model
    against itself), and each tested row's verdict decided again at its adjusted p
    (:func:`repro.verdicts.rule.adjusted_verdict`). Statements that read one test (the same two models, category,
    units and result, e.g. "a better than b" and "b no gain over a") count it once and share its adjusted p.
    ``within``: columns that also tell tests apart (the ledger's scale and statistic: one family over many pages)."""
    verdict, difference, column_adjusted = "verdict", "difference", ADJUSTED
    out = claims.copy()
    column = "p" if "p" in out else "p (Wilcoxon)"
    tested = out[verdict].map(is_tested) & out[column].notna()
    out[column_adjusted] = np.nan
    if tested.any():
        rows = out.loc[tested]
        keys = _test_keys(rows, column, within) or list(range(len(rows)))
        tests = dict(zip(keys, rows[column].astype(float)))  # one p per distinct test
        adjusted = dict(zip(tests, false_discovery_control(list(tests.values()))))
        out.loc[tested, column_adjusted] = [adjusted[k] for k in keys]
        if {"expected", difference} <= set(out):
            out.loc[tested, verdict] = [
                adjusted_verdict(r[verdict], r["expected"], r[difference], r.get("margin side"),
                                 r[column_adjusted], margin=_margin(r)) for _, r in out.loc[tested].iterrows()]
    return out
