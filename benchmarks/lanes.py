"""Benchmark: how to split this machine's cores between long training runs ("lanes"), measured in one run.

Every long run of the book (Paper 1 and Paper 3 under the budget rule) is a sequence of training steps. On a
machine with few cores the question is how many runs to train at once and with how many torch threads each.
This script trains the same workload (``--steps`` contrastive steps of one design on the same SNLI triplets,
the book's packed path) in several layouts and prints the machine's aggregate training throughput in each,
against one lane that has every core (the baseline, measured in the same run):

* ``1 lane x N threads``: one run, torch threads = the machine's cores (the default of a lone process);
* ``L lanes x 1 thread``: L runs at once, one thread each (``OMP_NUM_THREADS=1``);
* ``L lanes x N threads``: L runs at once, each with every core's worth of threads (what two background
  scripts started without ``OMP_NUM_THREADS`` do: the threads oversubscribe the cores).

Each layout's lanes are separate processes (as separate runs are). They load their model, take one warm-up
step, then wait for a common start signal, so the timing covers training steps only. Aggregate throughput =
the lanes' real (non-padding) training tokens / the wall time until the last lane finishes.

    python benchmarks/lanes.py --model 5 --steps 4 --lanes 2

Run it on a quiet machine (pause long runs with SIGSTOP): other work on the cores changes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def worker(args) -> None:
    """One lane: build the model, one warm-up step, wait for "go" on stdin, train, print tokens and seconds."""
    import torch

    from repro.training.contrastive import Collator, TrainConfig, build_model
    from repro.training.data import batch_indices, split_triplets
    from repro.training.loop import trainable_parameters
    from repro.training.objective import optimizer_step

    config = TrainConfig(backbone=args.backbone, model=args.model, batch_size=args.batch_size,
                         max_length=args.max_length, lora_dropout=0.0, packing=True)
    triplets, _ = split_triplets(config)
    rows = [[triplets[i] for i in batch_indices(len(triplets), args.batch_size, step, 0)]
            for step in range(args.steps + 1)]
    model = build_model(config)
    collate = Collator(model.backbone.tokenizer, config)
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=config.lr)
    model.train()

    def step(batch) -> int:
        return optimizer_step(model, collate, batch, config, optimizer)

    step(rows[0])  # warm-up
    print("ready", flush=True)
    sys.stdin.readline()
    start, tokens = time.perf_counter(), 0
    for batch in rows[1:]:
        tokens += step(batch)
    print(json.dumps({"tokens": tokens, "seconds": time.perf_counter() - start,
                      "threads": torch.get_num_threads()}), flush=True)


def run_layout(args, lanes: int, threads: int) -> dict:
    """``lanes`` worker processes with ``threads`` torch threads each, started together."""
    env = os.environ | {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    command = [sys.executable, __file__, "--worker", "--backbone", args.backbone, "--model", str(args.model),
               "--steps", str(args.steps), "--batch-size", str(args.batch_size), "--max-length", str(args.max_length)]
    logs = [tempfile.TemporaryFile("w+") for _ in range(lanes)]  # each lane's stderr, shown if it fails
    procs = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                              env=env) for log in logs]
    for p, log in zip(procs, logs):
        line = p.stdout.readline().strip()
        if line != "ready":
            p.wait()
            log.seek(0)
            raise RuntimeError(f"a lane failed before training:\n{log.read()[-3000:]}")
    start = time.perf_counter()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [json.loads(p.stdout.readline()) for p in procs]
    wall = time.perf_counter() - start
    for p, log in zip(procs, logs):
        p.wait()
        log.close()
    tokens = sum(r["tokens"] for r in results)
    return {"lanes": lanes, "threads": results[0]["threads"], "tokens": tokens, "wall": wall,
            "rate": tokens / wall, "lane_rate": sum(r["tokens"] / r["seconds"] for r in results) / lanes}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--model", type=int, default=5, help="Tang & Yang's design number (1-5)")
    parser.add_argument("--steps", type=int, default=4, help="timed training steps per lane")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--lanes", type=int, default=2, help="runs at once in the multi-lane layouts")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("steps", "batch_size", "max_length", "lanes"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.worker:
        return worker(args)
    cores = os.cpu_count() or 1
    layouts = [(1, cores), (args.lanes, 1), (args.lanes, cores)]
    print(f"{args.backbone}, model {args.model}: {args.steps} training steps x {args.batch_size} triplets "
          f"(max_length {args.max_length}, packed) per lane; {cores} cores")
    print(f"{'layout':<22} {'tokens':>7} {'wall s':>7} {'machine tok/s':>13} {'per lane tok/s':>14} "
          f"{'vs 1 lane':>9}")
    baseline = None
    for lanes, threads in layouts:
        r = run_layout(args, lanes, threads)
        baseline = baseline or r["rate"]
        label = f"{lanes} lane{'s' if lanes > 1 else ''} x {threads} thread{'s' if threads > 1 else ''}"
        print(f"{label:<22} {r['tokens']:>7} {r['wall']:>7.1f} {r['rate']:>13.1f} {r['lane_rate']:>14.1f} "
              f"{r['rate'] / baseline:>9.2f}", flush=True)


if __name__ == "__main__":
    main()
