"""What a published page must never show: a glued value that is empty or a placeholder ("computing", "pending",
"TODO", "nan"), or an empty table. :func:`placeholders` lists them in an executed page; a standard build stops on
any (:func:`repro.book.build.execute`), so a reader never reads a value that is not there. Runs still to do are
listed in one place, the rerun page's open runs, with the command that makes each."""

from __future__ import annotations

import re

import nbformat

PLACEHOLDER = re.compile(r"^\s*$|^(nan|none|null|<na>)$|\b(computing|pending|todo|tbd|placeholder)\b", re.IGNORECASE)
EMPTY_TABLE = re.compile(r"<table\b[^>]*>(?:(?!<td\b).)*</table>", re.DOTALL | re.IGNORECASE)


def _text(data: dict) -> str:
    if "text/plain" in data:
        text = "".join(data["text/plain"])
        return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text
    return "".join(next(iter(data.values()), ""))


def placeholders(nb: nbformat.NotebookNode) -> list[str]:
    """Each glued value of the executed page ``nb`` that is empty or a placeholder (by name), and each table it
    displays with no cell (an empty DataFrame), as one line each."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is not None and PLACEHOLDER.search(_text(data)):
                found.append(f"glued value {name!r} is {_text(data)[:60]!r}")
            html = "".join(data.get("text/html", ""))
            if name is None and EMPTY_TABLE.search(html):
                found.append("an empty table")
    return found
