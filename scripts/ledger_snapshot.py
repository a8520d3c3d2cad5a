"""Store the claims ledger as an earlier commit's code computed it, from today's committed results, so the ledger
page can show how each verdict changed with the verdict engine (``results/ledger_history/``).

The earlier code runs from a temporary git worktree of ``--commit`` (nothing of it is copied here), with this
checkout's results folder and virtualenv; only its rows (claim, scale, verdict, page) are stored, with the commit.

    .venv/bin/python scripts/ledger_snapshot.py --commit 5e74a4b
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repro.store.paths import data_dir  # noqa: E402
from repro.store.results import load_or_compute  # noqa: E402

EXPERIMENT = "ledger_history"
CODE = ("import json, sys\nfrom repro.crosspaper.ledger import claims_ledger\n"
        "rows = claims_ledger('standard')[['paper', 'claim', 'scale', 'verdict', 'page']]\n"
        "json.dump(rows.to_dict('records'), sys.stdout)\n")


def earlier_rows(commit: str) -> list[dict]:
    """The ledger rows the code at ``commit`` computes from this checkout's results."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit], check=True,
                       capture_output=True)
        try:
            env = os.environ | {"PYTHONPATH": str(tree), "REPRO_RESULTS_DIR": str(ROOT / "results"),
                                "REPRO_DATA_DIR": str(data_dir()), "PYTHONWARNINGS": "ignore"}
            out = subprocess.run([sys.executable, "-c", CODE], cwd=tree, env=env, capture_output=True, text=True)
            if out.returncode:
                raise RuntimeError(f"the ledger at {commit[:12]} failed: {out.stderr.strip().splitlines()[-1]}")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False,
                           capture_output=True)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commit", required=True, help="the earlier commit whose ledger code to run")
    args = parser.parse_args(argv)
    full = subprocess.run(["git", "-C", str(ROOT), "rev-parse", args.commit], capture_output=True, text=True)
    if full.returncode:
        print(f"error: unknown commit {args.commit!r}", file=sys.stderr)
        return 2
    commit = full.stdout.strip()

    def compute():
        import pandas as pd

        rows = pd.DataFrame(earlier_rows(commit))
        return rows, {}, {"commit": commit}

    record = load_or_compute(EXPERIMENT, {"commit": commit, "profile": "standard"}, compute)
    print(f"{len(record['rows'])} rows of the ledger at {commit[:12]} stored in results/{EXPERIMENT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
