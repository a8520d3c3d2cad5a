"""Helpers for the thin notebooks: parameter checking (:mod:`repro.core.params`: papermill passes whatever the
user typed), quiet logging, wrapped statements, and a claims table narrow enough for the page column."""

from __future__ import annotations

import html
import logging
import os
import sys
import textwrap
import warnings

import matplotlib as mpl
import pandas as pd
from IPython.display import HTML, display
from matplotlib import font_manager

from repro.book import without_iri_grammars
from repro.book.table_format import register as register_tables
from repro.core.params import check_params, list_hint  # noqa: F401 (list_hint: importable from here)
from repro.pages.parameters import NOTEBOOKS, PARAMETER_TYPES
from repro.store.derived import enable_for_pages
from repro.store.paths import offline
from repro.verdicts.rule import CONTRADICTED, SUPPORTED, base_verdict, is_tested, statement_verdict

MAX_ROWS = 2000  # rows a page's table shows before pandas cuts it
FIGURE_DPI = 120  # the pages' figures (rcParams in quiet)
MIN_FONT_PT = 9  # the smallest font a figure uses: quiet's sizes and every size a page sets (tested), so that a
# figure shown at the text column's width (book/_static/book.css) keeps its text at 9 pt or more when it is at most
# COLUMN_INCHES wide (the smoke book's test measures every rendered image in Chromium)
COLUMN_INCHES = 8.0


def check_page(namespace: dict, name: str) -> dict:
    """Check page ``name``'s parameters as they stand in the notebook's ``namespace`` (``globals()``, after
    papermill's injected cell) against :data:`repro.pages.parameters.PARAMETER_TYPES`: one clear TypeError per bad value
    or missing parameter. The page's parameter names are those of its profiles in :mod:`repro.pages.parameters`, plus
    ``recompute`` where the page has it. Returns the checked parameters ``{name: value}``."""
    if name not in NOTEBOOKS:
        raise ValueError(f"unknown page '{name}'; valid: {', '.join(NOTEBOOKS)}")
    enable_for_pages()  # the ledger's rows, built once for every page that shows verdicts (repro.store.derived)
    names = list(NOTEBOOKS[name]["standard"]) + (["recompute"] if "recompute" in namespace else [])
    missing = [n for n in names if n not in namespace]
    if missing:
        raise TypeError(f"page '{name}' lacks its parameter(s) {', '.join(missing)}: run its parameters cell first")
    check_params(**{n: (namespace[n], *PARAMETER_TYPES[n]) for n in names})
    return {n: namespace[n] for n in names}


def with_bundled_fonts() -> None:
    """matplotlib's font cache (``~/.cache/matplotlib``) is shared by every matplotlib of one version on the machine
    and is never checked against the fonts on disk: written by another installation, it may lack this one's bundled
    fonts (STIX, Computer Modern), and then math text falls back to DejaVu and every figure prints ``findfont``
    lines onto the page. Rebuilt here when it lacks them (as matplotlib rebuilds it when a listed file is missing;
    the rebuilt cache is written back, so once)."""
    listed = {os.path.basename(font.fname) for font in font_manager.fontManager.ttflist}  # by name: a venv's path
    if not {"STIXGeneral.ttf", "cmr10.ttf"} <= listed:  # may be spelled through a symlink; math text's fonts
        vars(font_manager.fontManager).update(vars(font_manager._load_fontmanager(try_read_cache=False)))


def quiet() -> None:
    """Keep rendered pages clean (no progress bars or library warnings in cell outputs) and work offline (the
    data are local files; a user who set ``HF_HUB_OFFLINE=0`` keeps the hub)."""
    os.environ["TQDM_DISABLE"] = "1"
    offline()
    warnings.filterwarnings("ignore")
    # the Hugging Face libraries' own switches, read when they are first imported: a page that only reads stored
    # results never imports them (datasets and transformers cost ~2 s per page); set in code where already imported
    os.environ.update({"HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
                       "TRANSFORMERS_VERBOSITY": "error"})
    if "datasets" in sys.modules:
        sys.modules["datasets"].disable_progress_bars()
    if "transformers" in sys.modules:
        sys.modules["transformers"].logging.set_verbosity_error()
        sys.modules["transformers"].logging.disable_progress_bar()
    logging.getLogger("mteb").setLevel(logging.ERROR)
    without_iri_grammars()  # myst-nb's glue imports nbformat: a page's kernel validates no IRI (repro.book)
    with_bundled_fonts()
    # figures drawn for the book's text column (book/_static/book.css scales them to its width): sharp, with
    # fonts that stay readable at that width
    register_tables()  # every displayed DataFrame: no 0..N index, ✓ / ✗, rounded columns (repro.book.table_format)
    pd.set_option("display.max_rows", MAX_ROWS)  # a page's long tables (collapsed) are shown whole up to MAX_ROWS
    mpl.rcParams.update({"figure.dpi": FIGURE_DPI, "savefig.dpi": FIGURE_DPI, "font.size": 11, "axes.titlesize": 12,
                         "axes.labelsize": 11, "legend.fontsize": 10, "xtick.labelsize": 10, "ytick.labelsize": 10,
                         "legend.title_fontsize": 10, "figure.titlesize": 12,
                         # every figure's legends are checked when it is drawn: under the smoke book's test a
                         # legend over data prints a line the test fails on (repro.book.legends)
                         "figure.hooks": ["repro.book.legends:watch"]})


def say(text: str, width: int = 78) -> None:
    """Print a long statement (e.g. a page's scale) wrapped, so the rendered page needs no scrolling."""

    print(textwrap.fill(text, width=width, break_long_words=False, break_on_hyphens=False))


def scale_box(text: str, deviations: pd.DataFrame | None = None, title: str = "Scale and deviations") -> None:
    """The page's scale sentence (and a deviations table) in a collapsed box, so the finding, figure and table
    lead the page and the details are one click away."""
    body = f"<p>{html.escape(text)}</p>" + (deviations.to_html(index=False) if deviations is not None else "")
    display(HTML(f"<details><summary>{html.escape(title)}</summary>{body}</details>"))


def caption(text: str, paper: str = "") -> None:
    """A figure's caption, under it: the takeaway in a sentence with its numbers (computed by the page), and the
    paper's value beside ours (``paper``: quoted, with its source, or why the paper gives none)."""
    quoted = f" <span class='paper-value'>Paper: {html.escape(paper)}</span>" if paper else ""
    display(HTML(f"<p class='figure-takeaway'><strong>Figure.</strong> {html.escape(text)}{quoted}</p>"))


def verdict_lead(claims, what: str = "comparisons") -> str:
    """A page's finding in one sentence, from its claims table (the ``verdict`` column of
    :func:`repro.verdicts.comparison.claims_table` and its seeded forms). Counted in statements, the ledger's unit,
    where the table names them (``statement``: one verdict per statement, :func:`statement_verdict`), with its
    ``what`` (comparisons) after; else in ``what``. With the largest tested difference; where no statement is
    decided either way, the page leads with that measured fact instead of zero counts."""
    if claims is None or len(claims) == 0 or "verdict" not in claims:
        return f"no {what} tested yet (their results are not stored)"
    if "statement" in claims:
        verdicts = claims.groupby("statement", sort=False)["verdict"].apply(
            lambda v: base_verdict(statement_verdict(v.astype(str))))
        noun = "statement" if len(verdicts) == 1 else "statements"
        units = f"{len(verdicts)} {noun} ({len(claims)} {what})"
    else:
        verdicts = claims["verdict"].astype(str).map(base_verdict)
        units = f"{len(claims)} {what}"
    supported, contradicted = int((verdicts == SUPPORTED).sum()), int((verdicts == CONTRADICTED).sum())
    counts = (f"of {units}, {supported} {'is' if supported == 1 else 'are'} supported at our scale, "
              f"{contradicted} contradicted and {len(verdicts) - supported - contradicted} neither (inconclusive or "
              "untestable)")
    rows = claims[pd.to_numeric(claims["difference"], errors="coerce").notna()] if "difference" in claims else claims.iloc[:0]
    tested = rows[rows["verdict"].astype(str).map(is_tested)]
    if not len(rows):
        return counts
    decided = supported + contradicted > 0
    row = (tested if len(tested) else rows).pipe(lambda t: t.loc[pd.to_numeric(t["difference"]).abs().idxmax()])
    label = row.get("comparison", row.get("statement", ""))
    category = row.get("category")
    where = f" ({category})" if isinstance(category, str) and category else ""
    fact = f"{float(row['difference']):+.2f} points, {label}{where}"
    if decided:
        return counts + (f"; the largest difference is {fact}" if len(tested) else "")
    kind = "tested " if len(tested) else "measured (untested) "
    return f"the largest {kind}difference is {fact}; {counts}"


CLAIM_COLUMNS = {"page": "page", "comparison": "comparison", "category": "category", "paired": "tasks",
                 "units": "units", "difference": "difference", "90% CI": "90% CI", "p": "p",
                 "p (BH)": "BH", "p (BH over the ledger)": "BH (ledger)", "seed spread": "spread", "verdict": "verdict"}


def claims_view(claims):
    """A claims table (:func:`repro.verdicts.comparison.claims_table` and its seeded forms) as one narrow table per
    statement, so the verdict is visible without scrolling: ``[(statement, table)]``, each table indexed by the
    page (where the claims have one) or the comparison, then the test's result and the verdict under short
    headers (columns it lacks are skipped, and the seed columns where every row of the statement has none). The
    page shows the full table (means, bootstrap CI, test) in a collapsed output."""
    columns = {c: short for c, short in CLAIM_COLUMNS.items() if c in claims}
    optional = [c for c in ("seed spread", "90% CI") if c in columns]  # single-seed rows have none

    def narrow(part):
        empty = [c for c in optional if (part[c].isna() | part[c].astype(str).eq("")).all()]
        keys = [c for c in LABEL_COLUMNS if c in part]
        label = row_labels(part)
        table = part[[c for c in columns if c not in empty and c not in keys]].rename(columns=columns)
        table.index = pd.Index(label, name=None)  # what tells the statement's rows apart labels them
        return table[["verdict", *[c for c in table.columns if c != "verdict"]]]  # seen without scrolling

    return [(statement, narrow(part)) for statement, part in claims.groupby("statement", sort=False)]


LABEL_COLUMNS = ("page", "comparison", "category")  # what may tell a statement's rows apart


def row_labels(part: pd.DataFrame) -> list[str]:
    """A label per row of one statement's claims: the fields of :data:`LABEL_COLUMNS` that vary between its rows,
    joined (the first present where none varies); the fields every row shares are said once, above the table."""
    keys = [c for c in LABEL_COLUMNS if c in part]
    varying = [c for c in keys if part[c].astype(str).nunique() > 1] or keys[:1]
    return part[varying].astype(str).agg(", ".join, axis=1).tolist()


DETAIL_COLUMNS = {"mean first": "mean first", "mean second": "mean second", "95% CI (bootstrap)": "95% CI (bootstrap)",
                  "detectable (80% power)": "detectable (80% power)",
                  "units a side for 2x margin": "units a side for 2x margin"}
CONSTANTS = {"page": "page", "comparison": "comparison", "category": "category", "test": "test", "expected": "expected",
             "units": "units"}  # said once above a statement's table, where all its rows share them


def show_claims(claims, detail: bool = False) -> None:
    """Display a claims table within the page's text column: per statement, a line with the statement and what its
    rows share (the test, the expected direction, the units), then its narrow table (:func:`claims_view`: verdict
    first). ``detail`` adds each comparison's means, bootstrap interval and power (the detectable effect and the
    units a side that twice the margin would need) as a second narrow table."""
    if claims is None or not len(claims):
        print("no claim has both of its sides stored yet")
        return
    views = dict(claims_view(claims))
    for statement, part in claims.groupby("statement", sort=False):
        labels = set(row_labels(part))
        shared = {label: part[c].iloc[0] for c, label in CONSTANTS.items()
                  if c in part and part[c].astype(str).nunique() == 1 and str(part[c].iloc[0]) not in labels}
        line = "; ".join(f"{label}: {value}" for label, value in shared.items())
        display(HTML(f"<p><strong>{html.escape(str(statement))}</strong>"
                     + (f" <span class='claim-constants'>({html.escape(line)})</span>" if line else "") + "</p>"))
        view = views[statement]
        display(view.drop(columns=[c for c in ("units",) if "units" in shared and c in view]))
        if detail:
            columns = [c for c in DETAIL_COLUMNS if c in part and part[c].notna().any()]
            if columns:
                display(part[columns].set_axis(pd.Index(row_labels(part), name=None)))
