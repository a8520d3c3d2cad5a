"""Helpers for the thin notebooks: parameter checking (papermill passes whatever the user typed), quiet
logging, wrapped statements, and a claims table narrow enough for the page column."""

from __future__ import annotations

import logging
import os
import sys
import textwrap
import warnings

import matplotlib as mpl

from repro.store.paths import offline


def check_params(**specs) -> None:
    """``check_params(name=(value, expected_type_or_tuple, allow_none))``: one clear TypeError per bad value.

    ``list[str]``-style checks: pass ``(value, (list, str))`` to require a list whose items are str.
    """
    for name, spec in specs.items():
        value, expected, *rest = spec
        allow_none = bool(rest and rest[0])
        if value is None and allow_none:
            continue
        if isinstance(expected, tuple) and len(expected) == 2 and expected[0] is list:
            item = expected[1]
            if not isinstance(value, list) or not all(isinstance(v, item) and not _bool_for_number(v, item)
                                                      for v in value):
                raise TypeError(f"parameter '{name}' must be a list of {_type_names(item)}, got {value!r}: "
                                f"{list_hint(name)}")
            continue
        if _bool_for_number(value, expected):
            raise TypeError(f"parameter '{name}' must be {_type_names(expected)}, got {value!r}")
        if not isinstance(value, expected):
            raise TypeError(f"parameter '{name}' must be {_type_names(expected)}, got {type(value).__name__} {value!r}")


def list_hint(name: str) -> str:
    """How to give a list parameter on the command line, in the forms that work: papermill's ``-p`` always passes
    a string, so lists go through ``-y`` (YAML); ``repro build -p`` parses a Python/JSON literal."""
    return (f"with papermill, give lists as YAML: -y '{name}: [a, b]'; "
            f"with the build: repro build --only PAGE -p '{name}=[\"a\", \"b\"]'")


def _type_names(expected) -> str:
    return expected.__name__ if isinstance(expected, type) else " or ".join(t.__name__ for t in expected)


def _bool_for_number(value, expected) -> bool:
    """True/False where a number is expected (bool is an int subclass, so isinstance would let it through)."""
    types = expected if isinstance(expected, tuple) else (expected,)
    return isinstance(value, bool) and bool not in types and any(t in (int, float) for t in types)


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
    # myst-nb's glue imports nbformat, whose jsonschema compiles 38 lark grammars (3-4 s) for its optional IRI
    # format checks when rfc3987_syntax is installed; a page's kernel validates no IRI, so it goes without them
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)
    # figures drawn for the book's text column (book/_static/book.css scales them to its width): sharp, with
    # fonts that stay readable at that width
    mpl.rcParams.update({"figure.dpi": 120, "savefig.dpi": 120, "font.size": 11, "axes.titlesize": 12,
                         "axes.labelsize": 11, "legend.fontsize": 10})


def say(text: str, width: int = 78) -> None:
    """Print a long statement (e.g. a page's scale) wrapped, so the rendered page needs no scrolling."""

    print(textwrap.fill(text, width=width, break_long_words=False, break_on_hyphens=False))


CLAIM_COLUMNS = {"page": "page", "comparison": "comparison", "category": "category", "paired": "tasks",
                 "units": "units", "difference": "difference", "90% CI": "90% CI", "p": "p",
                 "p (BH-adjusted)": "BH", "seed spread": "spread", "verdict at our scale": "verdict"}


def claims_view(claims):
    """A claims table (:func:`repro.core.comparison.claims_table` and its seeded forms) as one narrow table per
    statement, so the verdict is visible without scrolling: ``[(statement, table)]``, each table indexed by the
    page (where the claims have one) or the comparison, then the test's result and the verdict under short
    headers (columns it lacks are skipped, and the seed columns where every row of the statement has none). The
    page shows the full table (means, bootstrap CI, test) in a collapsed output."""
    columns = {c: short for c, short in CLAIM_COLUMNS.items() if c in claims}
    optional = [c for c in ("seed spread", "90% CI") if c in columns]  # single-seed rows have none

    def narrow(part):
        empty = [c for c in optional if (part[c].isna() | part[c].astype(str).eq("")).all()]
        table = part[[c for c in columns if c not in empty]].rename(columns=columns)
        return table.set_index(table.columns[0]).rename_axis(None)  # the page (or comparison) labels a row

    return [(statement, narrow(part)) for statement, part in claims.groupby("claim (paper)", sort=False)]
