"""The claims ledger: every claim of the three papers the book tests, from each paper's claims module on the stored
results of the page that tests it (the pages' own parameters, :mod:`repro.pages.parameters`).

Two levels. A **comparison** row (:func:`claims_ledger`) is one test: a statement's two sides in one category, on
one backbone or run, with its raw p and the Benjamini-Hochberg p adjusted over every current comparison of the
ledger as one family; its verdict is decided at the adjusted p (:mod:`repro.verdicts.rule`). A **statement**
(:func:`statements`) is one sentence of a paper, in its words, with one verdict from its comparisons: supported if
every comparison is, contradicted if any is, inconclusive otherwise (a statement of existence, "not always",
is supported by any one). Statements are tiered: **headline** (the abstract and main tables) and **ablation**
(ablations, hyperparameters, robustness checks); counts are per tier. Rows of superseded runs (the earlier fixed
training budget, the single-run Tables page of Paper 3) are history (:func:`history`), never counted.
Nothing here is typed: each verdict is the engine's, and a quoted number comes from the paper's ``quoted`` module
or from the claim text the claims module gives.
"""

from __future__ import annotations

import pandas as pd

from repro.core.suites import suite_caps_text
from repro.crosspaper.combinations import combination_table
from repro.crosspaper.combinations import ledger_rows as combination_rows
from repro.crosspaper.ledger_schema import ABLATION, COLUMNS, HEADLINE, NOT_QUOTED, PAPERS, from_claims, statement_of
from repro.crosspaper.registry import page_overrides, papers
from repro.pages.parameters import page_parameters
from repro.store.derived import cached_frame
from repro.verdicts.multiplicity import holm_within, with_adjusted_p

# the ledger's public names: its own, and the schema's that the pages read from here
__all__ = ["ABLATION", "COLUMNS", "HEADLINE", "NOT_QUOTED", "PAPERS", "adjusted", "all_comparisons", "claims_ledger",
           "current", "describe_scales", "from_claims", "paper_view", "scale_legend", "statement_of", "with_holm"]


def all_comparisons(profile: str = "standard", recompute: bool = False, pages: dict[str, dict] | None = None
                    ) -> pd.DataFrame:
    """Every comparison row of the three papers (:data:`COLUMNS`), current and superseded, with their verdicts
    at the raw p, read from the stored results of the pages (``recompute``: the pages' results computed again;
    ``pages``: other parameters for the pages a registered paper lets the ledger change, its ``ledger_pages``)."""
    pages = page_overrides(pages, profile)

    def build() -> pd.DataFrame:
        return pd.concat([paper.ledger_rows(profile, recompute, pages) for paper in papers()]
                         + [combination_rows(combination_table())], ignore_index=True)

    if recompute:
        return build()
    # a page's kernel keeps the rows on disk, keyed by the store, the code and the data (repro.store.derived)
    return cached_frame("ledger", {"profile": profile, "pages": pages}, build)


def adjusted(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with "p (BH)": Benjamini-Hochberg over every tested row as one family, and each tested verdict
    decided again at its adjusted p (:func:`repro.verdicts.multiplicity.with_adjusted_p`: the claim rows' schema),
    then Holm within each statement (:func:`with_holm`)."""
    # one key per test (repro.verdicts.multiplicity._test_keys): the two compared sides in the claim's brackets, in
    # either order ("[STS, 5 vs 1]"), the category and paired units, and within the ledger the scale and the
    # statistic; never the claim text, which differs between the statements that read one test (e.g. "a better than
    # b" and "b no gain over a")
    frame = rows.assign(comparison=rows["claim"].map(_compared), p=rows["p"].astype(float))
    return with_holm(with_adjusted_p(frame, within=("scale", "statistic")))


def with_holm(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` plus "p (Holm in statement)": Holm's adjustment of the raw p over the tested comparisons of each
    statement (:func:`repro.verdicts.multiplicity.holm_within`). A statement is contradicted only by a comparison
    contradicted at both its ledger-wide BH p and this p, and a statement of existence supported only by one
    supported at both (:func:`repro.crosspaper.statements.statements`): "contradicted if any" and "supported by any"
    are unions of tests, so they are corrected within the statement; "supported if all" (an intersection-union test)
    needs no correction."""
    return holm_within(rows, [rows["paper"], rows["claim"].map(statement_of)])


def _compared(claim: str) -> str:
    """The ``a vs b`` part of a claim's bracketed comparison (``"... [STS, 5 vs 1]"`` -> ``"5 vs 1"``; empty if
    none: the claim itself, a test of its own): what the ledger's BH de-duplication keys a row's test on, beside its
    scale, statistic, p and size."""
    bracket = claim.rsplit(" [", 1)[1].rstrip("]") if claim.endswith("]") and " [" in claim else ""
    return next((part for part in reversed(bracket.split(", ")) if " vs " in part), claim)


def claims_ledger(profile: str = "standard", recompute: bool = False, pages: dict[str, dict] | None = None
                  ) -> pd.DataFrame:
    """The current comparisons of the three papers (superseded runs left out: :func:`history`), with raw and
    Benjamini-Hochberg adjusted p over the whole ledger as one family, and verdicts at the adjusted p (``pages``:
    the same ledger with other parameters for some of Paper 3's pages, :func:`paper3_rows`)."""
    return current(all_comparisons(profile, recompute, pages))


def current(rows: pd.DataFrame) -> pd.DataFrame:
    """The claims ledger of comparison rows (:func:`all_comparisons`): the current ones, adjusted as one family."""
    return adjusted(rows[rows["current"].astype(bool)]).reset_index(drop=True)


def describe_scales(profile: str = "standard") -> str:
    """The suites the ledger's pages use, with their caps (one line each)."""
    suites = sorted({page_parameters(n, profile)["suite"] for n in ("p1_layerwise_mteb", "p1_tables",
                                                                    "p2_main_table", "p3_tables")})
    return "; ".join(f"'{s}': {suite_caps_text(s)}" for s in suites)


def scale_legend(rows: pd.DataFrame, prefix: str = "S", column: str = "scale",
                 keep: tuple = ()) -> tuple[pd.DataFrame, list[str]]:
    """A paper's rows with each distinct value of ``column`` (its scale; or its test, prefix ``T``; or the paper's
    quoted number, ``Q``) replaced by a short id (``S1``, ``S2``... in order of first appearance), and the legend
    lines (``"S1: <scale>"``): a value shared by many rows is stated once. Values in ``keep`` stay as they are."""
    values = [v for v in dict.fromkeys(rows[column]) if v not in keep]
    ids = {value: f"{prefix}{i + 1}" for i, value in enumerate(values)}
    return rows.assign(**{column: rows[column].map(lambda v: ids.get(v, v))}), [f"{i}: {v}" for v, i in ids.items()]


def paper_view(rows: pd.DataFrame) -> pd.DataFrame:
    """A paper's rows as the page shows them: indexed by (statement, comparison), each statement's rows together in
    order of its first appearance, so that rendered with a sparse index the page states each statement once, over
    its rows. A row's claim is the statement it tests followed by what the row compares in brackets (``"model 5 is
    good on STS [STS, 5 vs 1]"``; empty when the scale alone tells rows apart). A paper number the book does not
    quote shows as "-", and the column goes when the book quotes none of the paper's numbers."""
    parts = rows["claim"].str.extract(r"^(?P<statement>.*?)(?: \[(?P<comparison>[^\[\]]*)\])?$")
    order = {statement: i for i, statement in enumerate(dict.fromkeys(parts["statement"]))}
    frame = rows.drop(columns="claim").assign(statement=parts["statement"], comparison=parts["comparison"].fillna(""))
    quoted = frame["paper (quoted)"].ne(NOT_QUOTED)
    frame = frame.assign(**{"paper (quoted)": frame["paper (quoted)"].where(quoted, "-")}) if quoted.any() \
        else frame.drop(columns="paper (quoted)")
    frame = frame.iloc[frame["statement"].map(order).argsort(kind="stable")]
    return frame.set_index(["statement", "comparison"])
