"""The claims ledger's build against its disk cache (repro.store.derived), in one process.

    .venv/bin/python benchmarks/ledger.py [--profile standard] [--repeats 2]

Times, on the committed store (read only): the ledger built with no cache (the baseline: what every page that shows
verdicts did), the first build with a cache folder (a miss: the build plus writing the file) and the next (a hit:
the key over the store, the code and the data, then the file read). Prints each time and its ratio to the baseline.
A page's kernel is a fresh process; the hit here runs in the process that built, so it is timed once more after the
process's file digests are forgotten (what a fresh kernel pays).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from repro.crosspaper.ledger import claims_ledger
from repro.store import derived, fingerprint


def timed(profile: str, repeats: int) -> float:
    """The best of ``repeats`` builds of the ledger, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        claims_ledger(profile)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="standard")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    os.environ.setdefault("REPRO_COMPUTE", "refuse")  # read only: a missing result fails, never computes
    os.environ.setdefault("REPRO_TRAINING", "refuse")
    os.environ[derived.ENV] = "off"
    baseline = timed(args.profile, args.repeats)
    with tempfile.TemporaryDirectory() as folder:
        os.environ[derived.ENV] = folder
        miss = timed(args.profile, 1)
        hit = timed(args.profile, args.repeats)
        fingerprint._DIGESTS.clear()  # a fresh kernel hashes the store's files once
        fresh = timed(args.profile, 1)
    print(f"claims ledger ({args.profile} profile, committed store): best of {args.repeats}")
    for label, seconds in (("no cache (baseline)", baseline), ("cache miss (build + write)", miss),
                           ("cache hit", hit), ("cache hit, store digests not remembered", fresh)):
        print(f"  {label:42s} {seconds:7.2f} s   {seconds / baseline:6.3f} x baseline")


if __name__ == "__main__":
    main()
