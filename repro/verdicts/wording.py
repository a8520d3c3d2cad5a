"""How the book words its statistics, the same on every page: a p-value (:func:`p_text`) and the declared margins
(:func:`margins_sentence`, from :data:`repro.verdicts.rule.MARGINS`)."""

from __future__ import annotations

import pandas as pd

from repro.verdicts.rule import ALPHA, MARGINS


def margins_sentence() -> str:
    """The declared margins in words, from :data:`~repro.verdicts.rule.MARGINS`: "±1 point x100 (±2 for Retrieval)"."""
    usual = max(set(MARGINS.values()), key=list(MARGINS.values()).count)
    others = ", ".join(f"±{m:g} for {c}" for c, m in MARGINS.items() if m != usual)
    return f"±{usual:g} point x100" + (f" ({others})" if others else "")


def p_text(p) -> str:
    """A p-value as the book prints it: 2 significant digits ("0.012", "0.50"), "< 0.001" below 0.001, a third digit
    where 2 would carry it across alpha ("0.04999", never "0.050"), empty where there is none."""
    if p is None or pd.isna(p):
        return ""
    p = float(p)
    if p < 0.001:
        return "< 0.001"
    digits = 2
    while (p < ALPHA) != (float(f"{p:#.{digits}g}") < ALPHA) and digits < 6:
        digits += 1
    return f"{p:#.{digits}g}"
