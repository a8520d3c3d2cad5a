"""How the book spells a command to a reader: one function, :func:`build_command`, prints every rerun command the
pages, notices and the README show (``.venv/bin/repro build --only PAGE -p name=value``), so the spelling is one
and every printed command runs as printed (tests/test_book.py extracts them from the built pages and dry-runs each).
"""

from __future__ import annotations

import json

CLI = ".venv/bin/repro"  # the console script scripts/setup.sh installs in the project's venv


def _value(value) -> str:
    """A parameter value as ``-p`` reads it (a Python/JSON literal; :func:`repro.book.build.parse_override`),
    single-quoted for the shell where it holds a space, a bracket or a quote."""
    text = value if isinstance(value, str) else json.dumps(value)  # a bare word reads back as that string
    return f"'{text}'" if any(c in text for c in " []{}\"'") else text


def build_command(page: str | None = None, params: dict | None = None, *flags: str) -> str:
    """``.venv/bin/repro build [--only PAGE] [-p name=value ...] [flags]``: ``params`` values are literals (a
    list, a number, a word; placeholders such as ``NAME=VALUE`` print as they are)."""
    parts = [CLI, "build"]
    if page:
        parts += ["--only", page]
    for name, value in (params or {}).items():
        text = _value(value)
        parts += ["-p", f"'{name}={text[1:-1]}'" if text.startswith("'") else f"{name}={text}"]
    return " ".join([*parts, *flags])
