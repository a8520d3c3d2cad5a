"""The rendered page's order: its finding, figures and tables first, the parameters it ran with last.

Papermill needs a page's parameters cell before the code that reads it, so the notebook keeps it near the top; the
built page moves the cell it shows (papermill's injected cell, else the parameters cell) to the end, under a
"Parameters" heading with the command that reruns the page with other values. The cell has no output, so the
order of the outputs is unchanged."""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_markdown_cell

HEADING = "## Parameters"


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
        f"To rerun it with others: `python -m repro build --only {name} -p NAME=VALUE` (a rerun with other values "
        f"writes `reruns/{name}.ipynb` and leaves the published page alone; every page's parameters, allowed values and "
        "cost are on the *How to rerun* page)."), cell]
    return nb
