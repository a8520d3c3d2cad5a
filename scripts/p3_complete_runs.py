"""Which stored AutoRegEmbed runs are complete (the run record plus every task of a suite scored from one set of
weights), so that a session commits whole runs only, never a run without its scores or scores of two trainings.

    .venv/bin/python scripts/p3_complete_runs.py                 # one line per stage-2 run and suite
    .venv/bin/python scripts/p3_complete_runs.py --untracked     # only runs with files git does not track yet
    .venv/bin/python scripts/p3_complete_runs.py --files HASH    # the files of run HASH (record + scores), for git add
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from repro.autoregembed.experiments.scores import SCORES_EXPERIMENT  # noqa: E402
from repro.autoregembed.experiments.tables import sts_average  # noqa: E402
from repro.autoregembed.train import RUNS_EXPERIMENT  # noqa: E402
from repro.core.tasks import STS_TASKS  # noqa: E402
from repro.store.paths import results_dir  # noqa: E402


def tracked_files() -> set[str]:
    out = subprocess.run(["git", "ls-files", "results"], cwd=ROOT, capture_output=True, text=True, check=True)
    return {str(ROOT / line) for line in out.stdout.split()}


def runs_with_scores() -> list[dict]:
    """One entry per (run record, suite) with the score files of that run's configuration."""
    scores = defaultdict(list)
    for path in sorted((results_dir() / SCORES_EXPERIMENT).glob("*.json")):
        record = json.loads(path.read_text())
        key = json.dumps(record["params"].get("config"), sort_keys=True)
        scores[key, record["params"].get("suite")].append((path, record))
    entries = []
    for path in sorted((results_dir() / RUNS_EXPERIMENT).glob("*.json")):
        run = json.loads(path.read_text())
        key = json.dumps(run["params"]["config"], sort_keys=True)
        for suite in sorted({s for k, s in scores if k == key}) or [None]:
            files = scores.get((key, suite), [])
            rows = [row for _, record in files for row in record["rows"]]
            entries.append({"run": path.stem, "path": path, "stage": run["params"]["stage"], "suite": suite,
                            "config": run["params"]["config"], "files": [p for p, _ in files],
                            "tasks": sorted({row["task"] for row in rows}),
                            "digests": sorted({str(record.get("weights_sha256")) for _, record in files}),
                            "start": run.get("summary", {}).get("initial_digest"),
                            "sts": sts_average(pd.DataFrame(rows)) if rows else float("nan")})
    return entries


def describe(entry: dict, tracked: set[str]) -> str:
    config = entry["config"]
    sts_tasks = [t for t in entry["tasks"] if t in STS_TASKS]
    complete = len(entry["digests"]) == 1 and len(sts_tasks) == len(STS_TASKS)
    new = [p for p in [entry["path"], *entry["files"]] if str(p) not in tracked]
    changes = {k: config.get(k) for k in ("train_examples", "seed", "steps", "lr", "temperature", "beta",
                                          "divergence", "squash", "strategy", "reference_sign")}
    return (f"{entry['run']} {entry['stage']:8s} suite={entry['suite']} tasks={len(entry['tasks'])} "
            f"digests={entry['digests']} start={entry['start']} STS={entry['sts']:.2f} "
            f"{'COMPLETE' if complete else 'incomplete'} untracked={len(new)} {changes}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--untracked", action="store_true", help="only runs with untracked files")
    parser.add_argument("--files", metavar="HASH", help="print the files of this run (record + scores)")
    args = parser.parse_args(argv)
    entries = runs_with_scores()
    if args.files:
        chosen = [e for e in entries if e["run"] == args.files]
        if not chosen:
            raise SystemExit(f"no stored run {args.files}")
        print(" ".join(sorted({str(p.relative_to(ROOT)) for e in chosen for p in [e["path"], *e["files"]]})))
        return
    tracked = tracked_files()
    for entry in entries:
        line = describe(entry, tracked)
        if not args.untracked or "untracked=0" not in line:
            print(line)


if __name__ == "__main__":
    main()
