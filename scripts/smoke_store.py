"""Rebuild the committed smoke store (``tests/data/smoke_results``): every page of the smoke book computed from an
empty store, its results kept, so that the smoke book test exercises papermill, jupyter-book, MathJax and Chromium
without recomputing every page (``tests/test_book.py``; a separate test still computes pages from scratch).

    .venv/bin/python scripts/smoke_store.py        # ~10 min on 2 cores; commit tests/data/smoke_results

Run it when a change alters what a smoke page computes (a new result key): the smoke book test fails, naming the
results its build had to compute, until the store is rebuilt."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "tests" / "data" / "smoke_results"


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        results = Path(scratch) / "results"
        env = os.environ | {"REPRO_RESULTS_DIR": str(results), "REPRO_STATES_DIR": str(Path(scratch) / "states"),
                            "REPRO_RUNS_DIR": str(Path(scratch) / "runs"), "OMP_NUM_THREADS": "1"}
        subprocess.run([sys.executable, "-m", "repro", "build", "--profile", "smoke", "--no-site"], env=env,
                       cwd=ROOT, check=True)
        if STORE.exists():
            shutil.rmtree(STORE)
        shutil.copytree(results, STORE)
    files = list(STORE.rglob("*.json"))
    print(f"{STORE.relative_to(ROOT)}: {len(files)} results, {sum(f.stat().st_size for f in files) / 2**20:.1f} MB")


if __name__ == "__main__":
    main()
