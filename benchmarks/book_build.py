"""Benchmark: how long the standard book takes to rebuild from committed results, this checkout against a
baseline commit, both built on this machine in one run.

Each tree (the baseline in a temporary ``git worktree``, this checkout as it is committed, also in a worktree so
that uncommitted files do not count) executes every page of its own ``repro.book.pages`` in one build process
(``repro.book.build --no-site``, as a reader builds the book: the build's own imports are paid once), timed, with
each page's time as the build prints it, and then builds the site (timed). With ``--cold``
(the default) each tree gets empty cache folders (``REPRO_CACHE_DIR``, ``REPRO_STATES_DIR``), as on a fresh
machine after setup: backbones are dequantized again and nothing encoded earlier is reused; ``--warm`` shares
this machine's caches. Results are read from each tree's own committed ``results/``; a page that would compute
something it does not find there is what this benchmark exposes.

    python benchmarks/book_build.py --baseline 168d771            # every page, cold, both trees
    python benchmarks/book_build.py --baseline 168d771 --pages p2_filter_types p1_layer_correlation
    python benchmarks/book_build.py --baseline 168d771 --jobs 2   # the current tree builds two pages at once

Prints each page's seconds in both trees, their ratio, and the totals (the build process + the site). Run it on a
quiet machine.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repro.store.paths import data_dir

REPO = Path(__file__).resolve().parents[1]


def _worktree(rev: str, where: Path) -> Path:
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-f", str(where), rev], check=True,
                   capture_output=True)
    (where / ".venv").symlink_to(REPO / ".venv")
    vendor = REPO / "book" / "_vendor"
    if vendor.is_dir() and not (where / "book" / "_vendor").exists():
        (where / "book" / "_vendor").symlink_to(vendor)
    return where


def build_times(tree: Path, pages: list[str], cold: bool, scratch: Path, jobs: int = 1) -> dict[str, float]:
    """Seconds per page (papermill) and for the site, in ``tree``."""
    # the data folder is this checkout's (a tree in a temporary folder has no ../shared/data beside it)
    env = os.environ | {"PYTHONPATH": str(tree), "REPRO_RESULTS_DIR": str(tree / "results"),
                        "REPRO_DATA_DIR": str(data_dir()),
                        "REPRO_RUNS_DIR": str(scratch / "runs")}
    if cold:
        env |= {"REPRO_CACHE_DIR": str(scratch / "cache"), "REPRO_STATES_DIR": str(scratch / "states")}
    # one build process for all the pages, as a reader builds the book; each page's time as the build prints it
    command = [sys.executable, "-m", "repro.book.build", "--no-site", *(["--only", *pages] if pages else []),
               *(["--jobs", str(jobs)] if jobs > 1 else [])]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    times = {"(pages, one process)": time.perf_counter() - start}
    for line in result.stdout.splitlines():
        match = re.fullmatch(r"executed (\S+) \(([\d.]+) s\)", line.strip())
        if match:
            times[match[1]] = float(match[2])
            print(f"  {tree.name}: {match[1]} {match[2]} s", flush=True)
    if result.returncode:
        print(f"  {tree.name}: the build FAILED\n{result.stderr[-3000:]}", flush=True)
        times["(pages, one process)"] = float("nan")
    start = time.perf_counter()
    code = "from repro.book.build import build_site; build_site(strict=False)"
    subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, check=False)
    times["(site)"] = time.perf_counter() - start
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="the commit to compare with (e.g. 168d771)")
    parser.add_argument("--current", default="HEAD", help="the commit measured against it (default HEAD)")
    parser.add_argument("--pages", nargs="*", help="pages to time (default: every page of each tree)")
    parser.add_argument("--warm", action="store_true", help="share this machine's caches instead of empty ones")
    parser.add_argument("--jobs", type=int, default=1,
                        help="the current tree builds with repro build --jobs N (pages at once; the baseline predates it)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="book-bench-") as tmp:
        tmp = Path(tmp)
        trees = {label: _worktree(rev, tmp / label) for label, rev in (("baseline", args.baseline),
                                                                       ("current", args.current))}
        try:
            times = {}
            for label, tree in trees.items():
                pages = args.pages or []
                print(f"{label} ({subprocess.run(['git', '-C', str(tree), 'rev-parse', '--short', 'HEAD'], text=True, capture_output=True).stdout.strip()}):", flush=True)
                times[label] = build_times(tree, pages, not args.warm, tmp / f"{label}-scratch",
                                           args.jobs if label == "current" else 1)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                               capture_output=True)
    names = list(dict.fromkeys([*times["baseline"], *times["current"]]))
    print(f"\n{'page':28s} {'baseline s':>11s} {'current s':>10s} {'current/baseline':>17s}")
    for name in names:
        b, c = times["baseline"].get(name, float("nan")), times["current"].get(name, float("nan"))
        print(f"{name:28s} {b:11.1f} {c:10.1f} {c / b if b else float('nan'):17.2f}")
    total_b, total_c = (times[k]["(pages, one process)"] + times[k]["(site)"] for k in ("baseline", "current"))
    print(f"{'total':28s} {total_b:11.1f} {total_c:10.1f} {total_c / total_b:17.2f}")


if __name__ == "__main__":
    main()
