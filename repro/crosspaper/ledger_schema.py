"""The claims ledger's row schema (:data:`COLUMNS`), its tiers and papers, and :func:`from_claims`, which turns a
claims module's rows (the shared claims schema of :func:`repro.verdicts.rule.claim_row`) into ledger rows; shared by
:mod:`repro.crosspaper.ledger` and the per-paper row builders (:mod:`repro.crosspaper.ledger_paper2`)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from repro.crosspaper.registry import REGISTRY
from repro.verdicts.rule import MARGINS, TASKS_TEST
from repro.verdicts.wording import p_text

# the claim rows' names (repro.verdicts.rule.claim_row) wherever a ledger row holds the same thing: "difference",
# "category", "paired", "verdict", "p"; a ledger row adds its paper, tier, scale, page, currency and the bracketed
# claim (the statement and its comparison: the row's key, also in the stored ledger history)
COLUMNS = ["paper", "claim", "tier", "scale", "difference", "paper (quoted)", "test", "statistic", "expected", "p",
           "margin side", "verdict", "page", "current", "margin", "90% CI", "detectable (80% power)",
           "units a side for 2x margin", "category", "paired", "tasks", "p (MixedLM)", "metric"]
HEADLINE, ABLATION = "headline", "ablation"


class _Titles(Mapping):
    """Paper number -> title, read live from the registry (a paper registered later is in it)."""

    def __getitem__(self, number: int) -> str:
        return REGISTRY[number].title

    def __iter__(self):
        return iter(sorted(REGISTRY))

    def __len__(self) -> int:
        return len(REGISTRY)


PAPERS = _Titles()
WILCOXON = TASKS_TEST  # deterministic methods: tasks are the units
NOT_QUOTED = "not quoted in the book"


def fmt_p(p) -> str:
    text = p_text(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}" if text else ""


def from_claims(paper: int, claims: pd.DataFrame, scale: str, page: str, test: str | None = None,
                 quoted: pd.Series | None = None, tier: str = HEADLINE, current: bool = True) -> pd.DataFrame:
    """Rows of a :func:`repro.verdicts.comparison.claims_table`-shaped frame (the shared claim schema); ``test``
    defaults to each row's own test name; ``current`` False marks a superseded run's rows (history)."""
    if claims.empty:
        return pd.DataFrame(columns=COLUMNS)
    where = [", ".join(str(x) for x in (category, comparison) if x is not None and not pd.isna(x) and x != "all")
             for category, comparison in zip(claims["category"], claims.get("comparison", [None] * len(claims)))]
    claim = claims["statement"] + pd.Series([f" [{w}]" if w else "" for w in where], index=claims.index)
    p = claims["p"] if "p" in claims else claims["p (Wilcoxon)"]
    units = claims["units"] if "units" in claims else claims["paired"].astype(str) + " paired"
    return pd.DataFrame({
        "paper": PAPERS[paper], "claim": claim, "tier": tier, "scale": scale,
        "difference": claims["difference"].round(2),
        "paper (quoted)": quoted if quoted is not None else NOT_QUOTED,
        "test": test if test is not None else claims.get("test", WILCOXON),
        "statistic": [", ".join(x for x in (fmt_p(v), str(u)) if x) for v, u in zip(p, units)],
        "expected": claims.get("expected", "better"),
        "p": p.astype(float), "margin side": claims.get("margin side", ""),
        "verdict": claims["verdict"], "page": page, "current": current,
        "margin": claims["margin"] if "margin" in claims else float("nan"),
        **{c: claims[c] if c in claims else ("" if c == "90% CI" else float("nan")) for c in ("90% CI", "detectable (80% power)", "units a side for 2x margin")},
        "category": claims["category"], "paired": claims["paired"] if "paired" in claims else float("nan"),
        # a row over one task category's tasks (the paired units are its tasks): how many there are
        "tasks": pd.to_numeric(claims["paired"], errors="coerce").where(claims["category"].isin(list(MARGINS)))
        if "paired" in claims else float("nan"),
        "p (MixedLM)": claims["p (MixedLM)"] if "p (MixedLM)" in claims else float("nan"),
        # the family of what "difference" measures: a statistic's own (its unit and margin, verdicts.rule.UNITS), else ""
        # (points x100 of a score)
        "metric": claims["metric"].fillna("") if "metric" in claims else ""})


# a measured claim is shown as a measurement, never counted among the tested statements (verdicts.is_tested)
MEASURED = {"holds (measured)": "measured: holds (one measurement per point, no test)",
            "does not hold (measured)": "measured: does not hold (one measurement per point, no test)"}


def measured_row(paper: int, claim: dict, scale: str, test: str, statistic: str, page: str) -> pd.DataFrame:
    """One ledger row of a measured claim (a claims module's dict whose "verdict" is "holds
    (measured)" or "does not hold (measured)": one measurement per point, no statistical test, so no p)."""
    verdict = MEASURED.get(claim["verdict"], claim["verdict"])
    return pd.DataFrame([{"paper": PAPERS[paper], "claim": claim["statement"], "tier": HEADLINE, "scale": scale,
                          "difference": "", "paper (quoted)": NOT_QUOTED, "test": test, "statistic": statistic,
                          "expected": "better", "p": float("nan"), "margin side": "", "verdict": verdict,
                          "page": page, "current": True, "margin": float("nan"), "90% CI": "",
                          "detectable (80% power)": float("nan"), "units a side for 2x margin": float("nan"), "category": "",
                          "paired": float("nan"),
                          "tasks": float("nan"), "p (MixedLM)": float("nan"), "metric": ""}],
                        columns=COLUMNS)


def statement_of(claim: str) -> str:
    """The paper's statement a comparison row tests: its claim without the bracketed comparison."""
    return claim.split(" [")[0]
