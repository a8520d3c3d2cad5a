"""The rendered page's order: its finding, figures and tables first, the parameters it ran with last.

Papermill needs a page's parameters cell before the code that reads it, so the notebook keeps it near the top; the
built page moves the cell it shows (papermill's injected cell, else the parameters cell) to the end, under a
"Parameters" heading with the command that reruns the page with other values. The cell has no output, so the
order of the outputs is unchanged."""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_markdown_cell

from repro.core.commands import build_command

HEADING = "## Parameters"
TERMS = "Terms used here"  # the line under a results page's opening that links the glossary
TERMLESS = ("intro", "rerun", "reproducibility", "book_cost")  # pages that are not results pages


def _tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


def parameters_last(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """``nb`` (an executed page) with the parameters cell it shows moved to its end, under :data:`HEADING` and the
    rerun command (idempotent)."""
    shown = [c for c in nb.cells if "injected-parameters" in _tags(c)] or [
        c for c in nb.cells if "parameters" in _tags(c) and "remove-cell" not in _tags(c)]
    if not shown or any(c.cell_type == "markdown" and c.source.startswith(HEADING) for c in nb.cells):
        return nb
    cell = shown[0]
    nb.cells.remove(cell)
    nb.cells += [new_markdown_cell(
        f"{HEADING}\n\nThe page ran with these values (the code that read them is in the collapsed cells above). "
        f"To rerun it with others: `{build_command(name, {'NAME': 'VALUE'})}` (a rerun with other values "
        f"writes `reruns/{name}.html`, to open in a browser, and leaves the published page alone; every page's parameters, allowed values and "
        "cost are on the [How to rerun](rerun.ipynb) page)."), cell]
    return nb


def glossary_line(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """``nb`` (a results page) with one line under its opening text that links the glossary, where models 1-5,
    the suites, runs, the budget rule and the verdict words are explained once (idempotent; not on the pages that
    are not results pages, :data:`TERMLESS`)."""
    if name in TERMLESS or any(c.cell_type == "markdown" and c.source.startswith(f"*{TERMS}") for c in nb.cells):
        return nb
    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), None)
    if first is not None:
        nb.cells.insert(first + 1, new_markdown_cell(
            f"*{TERMS} (models 1-5, suites, runs and seeds, the budget rule, the verdict words): see the "
            "{doc}`glossary`.*"))
    return nb
