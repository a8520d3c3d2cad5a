"""Compare the text outputs (tables, printed lines, glued values) of two executed books, page by page: the
check that a refactor changed no number. Images are compared by count only (matplotlib PNGs embed no
numbers we print; their pixels can differ with fonts). Blank lines are skipped (where a blank line is printed, or how a
stream is split into outputs, is no difference) and each checkout's own folder reads as ``<repo>`` (two worktrees built side by side).

    python scripts/compare_books.py BEFORE/book AFTER/book
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from pathlib import Path


def text_outputs(path: Path) -> tuple[list[str], int]:
    """Every text output of the notebook's code cells, in order, and the number of images."""
    texts, images = [], 0
    repo = str(path.resolve().parent.parent)  # the checkout the book was built in (BOOK/.. )
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                texts.append("".join(out.get("text", "")))
            data = out.get("data", {})
            for kind in ("text/html", "text/markdown", "text/plain"):
                if kind in data:
                    # pandas Styler names each table with a random id (T_34a47): not a difference
                    texts.append(re.sub(r"\bT_[0-9a-f]{5}(?=[_\"\s])", "T_id", "".join(data[kind])))
                    break
            images += "image/png" in data
    # as lines without blank ones: a stream printed in one output or split over two, or ending in an extra newline,
    # is the same page
    lines = [line.rstrip() for t in texts for line in t.replace(repo, "<repo>").splitlines() if line.strip()]
    return lines, images


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    pages = sorted({p.name for p in args.before.glob("*.ipynb")} | {p.name for p in args.after.glob("*.ipynb")})
    differing = 0
    for name in pages:
        a, b = args.before / name, args.after / name
        if not (a.is_file() and b.is_file()):
            print(f"{name}: only in {'before' if a.is_file() else 'after'}")
            differing += 1
            continue
        (ta, ia), (tb, ib) = text_outputs(a), text_outputs(b)
        if ta == tb and ia == ib:
            print(f"{name}: identical ({len(ta)} lines of text, {ia} figures)")
            continue
        differing += 1
        print(f"{name}: DIFFERENT (lines of text {len(ta)} vs {len(tb)}, figures {ia} vs {ib})")
        diff = difflib.unified_diff(ta, tb, "before", "after", lineterm="", n=0)
        for line in list(diff)[:40]:
            print("   ", line[:200])
    print(f"{len(pages) - differing} of {len(pages)} pages identical")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
