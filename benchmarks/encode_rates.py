"""Benchmark: encode speed of every leaderboard method (:mod:`repro.crosspaper.encode_rates`), one process, on the same
texts, in rounds; prints each method's text tokens/s and its speed relative to the untrained last token measured
in the same round, and stores the table (``results/encode_rates``, with the machine's provenance) for the
leaderboard's cost figure.

    python benchmarks/encode_rates.py                       # every method, 3 rounds, stored
    python benchmarks/encode_rates.py --methods last echo p1-model5 --repeats 1 --no-store

Run it on a quiet machine: a rate measured beside another job is that job's rate too (the ratios less so).
"""

from __future__ import annotations

import argparse
import time

from repro.crosspaper.encode_rates import LABELS, measure, store


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--methods", nargs="+", choices=list(LABELS), default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--documents", type=int, default=32)
    parser.add_argument("--no-store", action="store_true")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rates = measure(args.backbone, args.methods, args.repeats, args.sentences, args.documents)
    total = time.perf_counter() - start
    print(rates[["method", "seconds", "text tokens", "text tokens/s", "speed vs last token"]].round(2).to_string())
    if not args.no_store:
        store(rates, args.backbone, args.repeats, args.sentences, args.documents, total)


if __name__ == "__main__":
    main()
