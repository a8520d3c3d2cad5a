"""scripts/compare_books.py: the refactor check tells a changed number from a re-split stream, a blank line, a
Styler id or the checkout's folder."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "compare_books.py"


def write_book(root: Path, outputs: list[dict]) -> Path:
    book = root / "book"
    book.mkdir(parents=True)
    cell = {"cell_type": "code", "metadata": {}, "source": "", "execution_count": 1, "outputs": outputs}
    (book / "page.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                                                 "nbformat_minor": 5}))
    return book


def stream(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def table(html):
    return {"output_type": "execute_result", "data": {"text/html": html}, "metadata": {}, "execution_count": 1}


def run(before: Path, after: Path):
    return subprocess.run([sys.executable, str(SCRIPT), str(before), str(after)], capture_output=True, text=True)


def test_the_same_page_printed_differently_is_identical_and_a_changed_number_is_not(tmp_path):
    a = write_book(tmp_path / "a", [stream(f"mean 61.25\nread from {tmp_path / 'a'}/results\n\n"),
                                    table('<table id="T_1a2b3_">61.25</table>')])
    b = write_book(tmp_path / "b", [stream("mean 61.25\n"), stream(f"read from {tmp_path / 'b'}/results\n"),
                                    table('<table id="T_9f8e7_">61.25</table>')])
    same = run(a, b)
    assert same.returncode == 0 and "1 of 1 pages identical" in same.stdout
    c = write_book(tmp_path / "c", [stream("mean 61.26\n"), table('<table id="T_1a2b3_">61.25</table>')])
    changed = run(a, c)
    assert changed.returncode == 1 and "DIFFERENT" in changed.stdout and "+mean 61.26" in changed.stdout
