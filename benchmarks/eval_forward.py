"""Benchmark: the no-gradient forward of a trained (LoRA) design, with its adapters as peft keeps them against the
adapters merged into a copy (``repro.training.lora.merged_for_inference``), measured in one run.

This is the forward behind every dev evaluation of a run under the budget rule (STS-B dev, 3,000 sentences at
each evaluation, ~45% of a Paper 1 run's time) and behind the scoring of a trained model. For each design asked
for, on the same STS-B dev sentences, each variant is timed ``--rounds`` times, alternating, and the median is
kept; the merge itself (a deep copy + ``merge_and_unload``) is timed apart, since the dev evaluation pays it once
per evaluation. The LoRA B matrices are drawn at random (a trained adapter's values; speed does not depend on
them), and the largest difference between the two variants' embeddings is printed beside the ratio.

    python benchmarks/eval_forward.py --models 1 5 --sentences 600 --rounds 3

Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from repro.pooling_attention.trained import converged_config
from repro.training.contrastive import Collator, build_model, embed_texts
from repro.training.data import read_tsv, task_folder
from repro.training.lora import merged_for_inference


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--models", nargs="+", type=int, default=[1, 5])
    parser.add_argument("--sentences", type=int, default=600, help="STS-B dev sentences (both sides of the pairs)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args(argv)
    if args.sentences < 2 or args.rounds < 1:
        parser.error("--sentences must be >= 2 and --rounds >= 1")
    torch.set_num_threads(args.threads)
    rows = read_tsv(task_folder("STSBenchmark") / "dev.tsv")[:args.sentences // 2]
    texts = [r["sentence1"] for r in rows] + [r["sentence2"] for r in rows]
    print(f"{args.backbone}, {len(texts)} STS-B dev sentences, {args.threads} threads, median of {args.rounds} "
          f"rounds, packed no-gradient forward as in the dev evaluation")
    print(f"{'model':>5} {'tokens':>7} {'adapters tok/s':>15} {'merged tok/s':>13} {'ratio':>6} {'merge s':>8} "
          f"{'max |diff|':>11}")
    for number in args.models:
        config = converged_config(args.backbone, number, 0)
        model = build_model(config).eval()
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.copy_(torch.randn(p.shape, generator=generator) * 0.01)
        collate = Collator(model.backbone.tokenizer, config)
        tokens = sum(len(collate.tokenize(t).ids) for t in texts)
        start = time.perf_counter()
        merged = merged_for_inference(model)
        merge_seconds = time.perf_counter() - start
        seconds = {"adapters": [], "merged": []}
        out = {}
        for _ in range(args.rounds):
            for name, variant in (("adapters", model), ("merged", merged)):
                start = time.perf_counter()
                out[name] = embed_texts(variant, collate, texts, packing=config.packing)
                seconds[name].append(time.perf_counter() - start)
        rate = {k: tokens / statistics.median(v) for k, v in seconds.items()}
        diff = float(np.abs(out["adapters"] - out["merged"]).max())
        print(f"{number:>5} {tokens:>7} {rate['adapters']:>15.0f} {rate['merged']:>13.0f} "
              f"{rate['merged'] / rate['adapters']:>6.2f} {merge_seconds:>8.2f} {diff:>11.1e}", flush=True)


if __name__ == "__main__":
    main()
