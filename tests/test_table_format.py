"""How pages render their tables (repro.book.table_format)."""

import numpy as np
import pandas as pd

from repro.book.table_format import decimals, frame_html, is_p_column, label, styled


def _cells(html: str) -> list[str]:
    import html as html_lib
    import re

    return [html_lib.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>.*?</td>", html, flags=re.S)]


def test_a_row_number_index_is_left_out_and_a_named_index_stays():
    frame = pd.DataFrame({"model": [1, 5], "score": [66.62, 59.12]})
    assert "row_heading" not in frame_html(frame)
    assert "row_heading" not in frame_html(frame[frame.score > 60])  # a filtered 0..N index still only numbers rows
    assert "row_heading" in frame_html(frame.set_index("model"))
    assert "row_heading" in frame_html(frame.set_index(pd.Index(["a", "b"])))


def test_booleans_print_as_marks_and_floats_are_rounded_per_column():
    frame = pd.DataFrame({"gain": [2.1, 0.75], "n": [2400.0, 3.0], "long": [4.912721, 1.0], "ok": [True, False],
                          "p (difference)": [0.000123, 0.0496], "mixed": [True, "n/a"]})
    cells = _cells(frame_html(frame))
    # scores to 2 decimals at most; p as the book prints every p: 2 significant digits, "< 0.001" below it
    assert cells[:6] == ["2.10", "2400", "4.91", "✓", "< 0.001", "✓"]
    assert cells[6:] == ["0.75", "3", "1.00", "✗", "0.0496", "n/a"]
    quoted = pd.DataFrame({"edge/2": [57.7, "–"], "raw": [57.32, 56.61]}, dtype=object)  # a paper's table, "–" missing
    assert _cells(frame_html(quoted)) == ["57.7", "57.32", "–", "56.61"]  # decimals per column
    assert decimals(pd.Series([1.0, 2.0])) == 0 and decimals(pd.Series([1.25, np.nan])) == 2
    assert decimals(pd.Series([1 / 3])) == 2
    assert [is_p_column(n) for n in ("p", "p (BH)", "largest p (BH)", "p within margin (equal)", "raw_p",
                                     "Wilcoxon p", "adjusted p", "step", "pages", "prompt", "top", "steps")] == [
        True] * 7 + [False] * 5
    assert _cells(frame_html(pd.DataFrame({"c": [0.00012, 0.0003]}))) == ["0.00012", "0.0003"]  # never "0"


def test_the_verdict_column_comes_second():
    frame = pd.DataFrame({"comparison": ["a vs b"], "difference": [1.5], "p": [0.2], "verdict": ["inconclusive"]})
    html = frame_html(frame)
    assert [h for h in ("comparison", "verdict", "difference") if h in html] and \
        html.index(">verdict<") < html.index(">difference<") and html.index(">comparison<") < html.index(">verdict<")
    labelled = frame_html(frame.set_index("comparison").rename(columns={"verdict": "verdict"}))
    assert labelled.index(">verdict<") < labelled.index(">difference<")


def test_snake_case_columns_read_as_words_and_odd_frames_keep_pandas_form():
    assert [label(n) for n in ("ci_low", "peak_mb_above_model", "batch size", "model")] == [
        "CI low", "peak MB above model", "batch size", "model"]
    html = frame_html(pd.DataFrame({"ci_low": [0.5]}))
    assert "CI low" in html and "ci_low" not in html
    duplicated = pd.DataFrame([[1, 2]], columns=["a", "a"])
    assert frame_html(duplicated) == duplicated._repr_html_()
    many = pd.DataFrame({"x": range(pd.get_option("display.max_rows") + 1)})
    assert frame_html(many) == many._repr_html_()  # truncated as pandas does, never every row
    # a page's own formats still apply after the book's (styled returns a Styler)
    assert "50%" in styled(pd.DataFrame({"share": [0.5]})).format({"share": "{:.0%}"}).to_html()


def test_a_pages_long_table_is_shown_whole():
    import subprocess
    import sys

    from repro.book.notebook import MAX_ROWS

    # a page's kernel calls quiet(), which sets the rows pandas shows (in a fresh process: quiet() changes globals)
    code = "import pandas as pd; from repro.book.notebook import quiet; quiet(); print(pd.get_option('display.max_rows'))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == str(MAX_ROWS)
    with pd.option_context("display.max_rows", MAX_ROWS):
        html = frame_html(pd.DataFrame({"task": [f"t{i}" for i in range(703)], "score": range(703)}))
    assert html.count("<tr") == 704 and "t702" in html  # the header and every row (pandas cuts at 60 otherwise)
