"""How a page's tables render: no 0..N index column, ✓ / ✗ for booleans, numbers rounded per column.

:func:`register` makes this the HTML form of every DataFrame a page displays (``repro.book.notebook.quiet`` calls
it), so no page formats its tables by hand:

* an index that only numbers the rows (unnamed integers) is left out; a named or labelled index stays;
* True / False print as ✓ / ✗, and snake_case column names as words (``ci_low`` -> ``CI low``);
* a p-value column (its name is ``p``, starts with ``p `` / ``p (``, ends with `` p`` / ``_p``, or names a p-value)
  prints as the book prints every p (:func:`repro.verdicts.wording.p_text`: 2 significant digits, "< 0.001" below it,
  never carried across alpha); a column with a nonzero value that 2 decimals would print as 0 keeps 3 significant
  digits (0.000123 stays 0.000123); every other float column gets the fewest decimals, up to 2, that show its values
  after rounding to 2 (a column of 2.1 and 0.75 prints 2.10 and 0.75; 2400.000 prints 2400);
* the verdict column (``verdict``, ``verdict``) comes second, after the column that labels a row (or
  first, where a labelled index does), so a reader sees it without scrolling.
"""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
from IPython import get_ipython

from repro.verdicts.wording import p_text

MAX_DECIMALS = 2
VERDICT_COLUMNS = ("verdict", "verdict")
_SNAKE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)+")
_WORDS = {"ci": "CI", "mb": "MB", "gb": "GB", "ms": "ms", "sts": "STS", "cpu": "CPU", "gflops": "GFLOP/s",
          "fp32": "fp32", "sd": "SD", "eos": "EOS", "n": "n"}
_P_COLUMN = re.compile(r"^(p|largest p|smallest p|adjusted p|raw p|wilcoxon p)(\b|$)|p-value|\bp \(|\(p\)|^p_|_p$"
                       r"|\bp$", re.IGNORECASE)


def is_p_column(name) -> bool:
    """Whether a column holds p-values, by its name."""
    return isinstance(name, str) and bool(_P_COLUMN.search(name.strip()))


def decimals(values: pd.Series) -> int:
    """The fewest decimals (at most :data:`MAX_DECIMALS`) that show every finite value of ``values`` rounded to
    :data:`MAX_DECIMALS`."""
    finite = values[np.isfinite(values)].round(MAX_DECIMALS)
    for places in range(MAX_DECIMALS + 1):
        if np.allclose(finite, finite.round(places), rtol=0, atol=10 ** -(MAX_DECIMALS + 2)):
            return places
    return MAX_DECIMALS


def _float_formatter(name, values: pd.Series):
    finite = values[np.isfinite(values)]
    tiny = ((finite != 0) & (finite.abs().round(MAX_DECIMALS) == 0)).any()  # would print as 0 at 3 decimals
    if is_p_column(name):
        return lambda v: html.escape(p_text(v))  # "< 0.001" in HTML
    if tiny:
        return lambda v: "" if pd.isna(v) else f"{v:.3g}"
    places = decimals(values.astype(float))
    return lambda v: "" if pd.isna(v) else f"{v:,.{places}f}" if abs(v) >= 10_000 else f"{v:.{places}f}"


def _cell(value):
    if isinstance(value, (bool, np.bool_)):
        return "✓" if value else "✗"
    return value


def positional(index: pd.Index) -> bool:
    """Whether ``index`` only numbers the rows: unnamed integers (0..N, or what is left of them after a filter)."""
    return (not isinstance(index, pd.MultiIndex) and index.name is None
            and pd.api.types.is_integer_dtype(index.dtype))


def verdict_second(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its verdict column moved after the column that labels a row (first where the index labels
    them)."""
    columns = list(frame.columns)
    verdict = [c for c in columns if isinstance(c, str) and c in VERDICT_COLUMNS]
    if not verdict or isinstance(frame.columns, pd.MultiIndex):
        return frame
    rest = [c for c in columns if c not in verdict]
    head = rest[:1] if positional(frame.index) else []
    return frame[head + verdict + rest[len(head):]]


def styled(frame: pd.DataFrame):
    """``frame`` as the book shows it (a pandas Styler)."""
    shown = verdict_second(frame).copy()
    formats = {}
    for position, column in enumerate(shown.columns):
        values = shown.iloc[:, position]
        if pd.api.types.is_bool_dtype(values) or (values.dtype == object and values.map(
                lambda v: isinstance(v, (bool, np.bool_))).any()):
            shown.isetitem(position, values.map(_cell))
        elif pd.api.types.is_float_dtype(values):
            formats[column] = _float_formatter(column, values)
        elif values.dtype == object:  # numbers beside text ("–" for a missing value): the numbers rounded
            numbers = values[values.map(lambda v: isinstance(v, (float, np.floating)))]
            if len(numbers):
                number = _float_formatter(column, numbers.astype(float))
                formats[column] = lambda v, number=number: number(v) if isinstance(v, (float, np.floating)) else v
    styler = shown.style.format(formats, na_rep="").set_table_attributes('class="dataframe"')  # the book's table CSS
    text = [c for i, c in enumerate(shown.columns) if shown.iloc[:, i].dtype == object and c not in formats]
    if text:  # words read from the left; numbers stay right-aligned
        styler = styler.set_properties(subset=text, **{"text-align": "left"})
    styler = styler.set_table_styles([{"selector": "th.col_heading", "props": [("text-align", "left")]}],
                                     overwrite=False)
    if positional(shown.index):
        styler = styler.hide(axis="index")
    return styler


def label(name):
    """A column name as a reader reads it: ``ci_low`` -> ``CI low``, ``peak_mb_above_model`` -> ``peak MB above
    model`` (names that are not snake_case stay as they are)."""
    if not isinstance(name, str) or not _SNAKE.fullmatch(name):
        return name
    return " ".join(_WORDS.get(word, word) for word in name.split("_"))


def frame_html(frame: pd.DataFrame) -> str:
    """The HTML a page renders for ``frame`` (its snake_case column names in words: :func:`label`)."""
    renamed = frame.rename(columns=label) if not isinstance(frame.columns, pd.MultiIndex) else frame
    renamed = frame if renamed.columns.duplicated().any() else renamed
    if renamed.columns.duplicated().any() or len(frame) > (pd.get_option("display.max_rows") or len(frame)):
        return renamed._repr_html_()  # a Styler needs unique labels and shows every row: pandas' own form
    return styled(renamed).to_html()


def register() -> None:
    """Render every DataFrame of the running IPython kernel with :func:`frame_html` (no-op outside IPython)."""
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, frame_html)
