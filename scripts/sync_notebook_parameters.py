"""Write each notebook's ``standard`` profile (repro.pages.parameters) into its parameters cell, keeping the cell's
comments; ``--check`` only reports the notebooks whose defaults differ (tests/test_book.py runs the check).

    python scripts/sync_notebook_parameters.py [--check]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repro.pages.parameters import NOTEBOOKS  # noqa: E402


def parameters_cell(notebook: dict) -> dict:
    return next(c for c in notebook["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))


def defaults(source: str) -> dict:
    """The values the parameters cell assigns (literals only)."""
    return {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(source).body
            if isinstance(node, ast.Assign)}


def differences(name: str) -> dict:
    notebook = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    have = defaults("".join(parameters_cell(notebook)["source"]))
    want = NOTEBOOKS[name]["standard"]
    missing = set(want) - set(have)
    diff = {k: (have.get(k), v) for k, v in want.items() if have.get(k) != v}
    extra = set(have) - set(want) - {"recompute"}
    if missing or extra:
        diff["(names)"] = (sorted(extra), sorted(missing))
    return diff


def sync(name: str) -> bool:
    path = ROOT / "notebooks" / f"{name}.ipynb"
    notebook = json.loads(path.read_text())
    cell = parameters_cell(notebook)
    source = "".join(cell["source"])
    lines = source.splitlines()
    want = NOTEBOOKS[name]["standard"]
    for node in sorted(ast.parse(source).body, key=lambda n: -n.lineno):
        if not isinstance(node, ast.Assign) or node.targets[0].id not in want:
            continue
        key = node.targets[0].id
        if ast.literal_eval(node.value) == want[key]:
            continue
        last = lines[node.end_lineno - 1]
        comment = last[last.index("#"):] if "#" in last[node.end_col_offset:] or (
            node.end_lineno == node.lineno and "#" in last.split("=", 1)[1].split(")")[-1]) else ""
        comment = "  " + comment.strip() if comment else ""
        lines[node.lineno - 1:node.end_lineno] = [f"{key} = {want[key]!r}{comment}"]
    text = "\n".join(lines) + ("\n" if source.endswith("\n") else "")
    if text == source:
        return False
    cell["source"] = text.splitlines(keepends=True)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    bad = {name: differences(name) for name in NOTEBOOKS}
    bad = {k: v for k, v in bad.items() if v}
    if args.check:
        for name, diff in bad.items():
            print(f"{name}: {diff}")
        sys.exit(1 if bad else 0)
    for name in bad:
        if sync(name):
            print(f"synced {name}")
    left = {name: differences(name) for name in NOTEBOOKS}
    left = {k: v for k, v in left.items() if v}
    if left:
        sys.exit(f"still different (edit by hand): {left}")


if __name__ == "__main__":
    main()
