"""One verdict per comparison, book-wide: a page's claims rows (the shared claims schema of
:func:`repro.verdicts.rule.claim_row`) with the verdict the claims ledger decided for the same comparison (BH over
the whole ledger, :func:`repro.crosspaper.ledger.claims_ledger`), never a second one decided over the page or at
the raw p. A row is matched to the ledger by its page, its claim in the ledger's words (claim and bracketed
comparison, :func:`repro.crosspaper.ledger_schema.from_claims`) and its difference; a row the ledger does not hold
(a page rerun with other parameters) keeps the engine's verdict at its raw p and says so."""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from repro.crosspaper.ledger import claims_ledger
from repro.crosspaper.ledger_schema import from_claims

NOT_ON_LEDGER = "not on the ledger (a page rerun with other parameters, or a descriptive row): verdict at the raw p"
LEDGER_P = "p (BH over the ledger)"


@lru_cache(maxsize=2)
def _ledger(profile: str) -> pd.DataFrame:
    return claims_ledger(profile)


def ledger_keys(claims: pd.DataFrame, paper: int, page: str) -> list[tuple]:
    """Each claims row's key on the ledger: (page, the ledger's claim string, its difference rounded as the ledger
    stores it)."""
    rows = from_claims(paper, claims, "", page)
    return [(page, c, round(float(d), 2) if pd.notna(d) else None) for c, d in zip(rows["claim"], rows["difference"])]


def on_ledger(claims: pd.DataFrame, paper: int, page: str, profile: str = "standard",
              ledger: pd.DataFrame | None = None) -> pd.DataFrame:
    """``claims`` with "verdict" the ledger's verdict of the same comparison, its BH-adjusted p
    (:data:`LEDGER_P`) and "on the ledger" (False where the ledger holds no such comparison: the raw-p verdict is
    kept and the column :data:`NOT_ON_LEDGER` says why)."""
    if claims is None or not len(claims):
        return claims
    ledger = _ledger(profile) if ledger is None else ledger
    ours = pd.to_numeric(ledger["difference"], errors="coerce").round(2)
    index = {(p, c, None if pd.isna(d) else float(d)): (v, q)
             for p, c, d, v, q in zip(ledger["page"], ledger["claim"], ours, ledger["verdict"], ledger["p (BH)"])}
    found = [index.get(key) for key in ledger_keys(claims, paper, page)]
    out = claims.copy()
    out["on the ledger"] = [f is not None for f in found]
    out[LEDGER_P] = [f[1] if f else float("nan") for f in found]
    out["verdict"] = [f[0] if f else v for f, v in zip(found, out["verdict"])]
    if not out["on the ledger"].all():
        out["note"] = out["on the ledger"].map(lambda x: "" if x else NOT_ON_LEDGER)
    return out
