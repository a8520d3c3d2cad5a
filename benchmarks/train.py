"""Benchmark: what a training step costs, in forwards of the book's own encoder, measured in one run.

For each design asked for (default: Tang & Yang's model 1 and model 5), on the same batches of training
triplets (query, positive, hard negative; max_length as in training):

* **training tok/s**: forward with gradients, InfoNCE, backward and an AdamW step, counting real tokens only
  (padding excluded), for the earlier path (one padded forward for the queries and one for the documents,
  LoRA dropout 0.1) and the optimised one (one padding-free packed forward, ``repro.training.packing``; LoRA
  dropout 0, a declared config change);
* **forward-only tok/s** of the same model on the same batches, no gradients (padded and packed);
* **encode tok/s**: :func:`repro.core.encode.encode` (the length-sorted, cached-states forward every
  training-free page uses; cache off) on the same texts with the same backbone.

The ratio encode tok/s / training tok/s is the step's cost in **encoder-forward-equivalents** (the issue's
target for a contrastive step: <= 3.5). ``--autoreg`` adds an AutoRegEmbed stage-2 step (see
``benchmarks/autoreg_step.py``).

    python benchmarks/train.py --models 1 5 --batch-size 16 --batches 6
"""

from __future__ import annotations

import argparse
import time

import torch

from repro.core.encode import EncodeConfig, encode
from repro.training.contrastive import Collator, TrainConfig, batch_embeddings, build_model, info_nce
from repro.training.data import batch_indices, split_triplets
from repro.training.loop import trainable_parameters
from repro.training.packing import pack


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(config: TrainConfig, rows: list[list[dict]], repeats: int) -> dict:
    """Training and forward-only seconds on ``rows`` (one list of triplets per step) for one config."""
    model = build_model(config)
    collate = Collator(model.backbone.tokenizer, config)
    causal = model.spec.attention == "causal"
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=config.lr)
    tokens = 0

    def training():
        nonlocal tokens
        model.train()
        tokens = 0
        for batch in rows:
            q, p, n, valid, used = batch_embeddings(model, collate, batch, config.packing, "cpu")
            info_nce(q, p, n, config.temperature, valid).backward()
            optimizer.step()
            optimizer.zero_grad()
            tokens += used

    def forward_only():
        model.eval()
        with torch.no_grad():
            for batch in rows:
                texts = [r["query"] for r in batch] + [r["positive"] for r in batch] + [r["negative"] for r in batch]
                if config.packing:
                    model(packed=pack([collate.tokenize(t).ids for t in texts], collate.pad, causal))
                else:
                    n = len(batch)
                    model(*collate(texts[:n])), model(*collate(texts[n:]))

    forward_only()  # warm-up
    forward = min(timed(forward_only) for _ in range(repeats))
    train = min(timed(training) for _ in range(repeats))
    texts = [t for batch in rows for r in batch for t in (r["query"], r["positive"], r["negative"])]
    return {"train": train, "forward": forward, "tokens": tokens, "texts": texts, "backbone": model.backbone}


def encode_seconds(backbone, texts: list[str], max_length: int, repeats: int) -> float:
    config = EncodeConfig(prompt="none", poolings=("last",), max_length=max_length)
    encode(backbone, texts[:64], config, cache=False, progress=False)  # warm-up
    return min(timed(lambda: encode(backbone, texts, config, cache=False, progress=False)) for _ in range(repeats))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--models", nargs="+", type=int, default=[1, 5])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=2, help="best of this many timings")
    args = parser.parse_args(argv)
    print(f"{args.backbone}: {args.batches} batches x {args.batch_size} triplets (max_length {args.max_length}), "
          f"{torch.get_num_threads()} threads; tok/s count real tokens only; best of {args.repeats}")
    print(f"{'model':>5} {'path':<38} {'train tok/s':>11} {'forward tok/s':>13} {'encode tok/s':>12} "
          f"{'step / forward':>14} {'encoder-fwd-eq':>14}")
    for number in args.models:
        earlier = TrainConfig(backbone=args.backbone, model=number, batch_size=args.batch_size,
                              max_length=args.max_length, lora_dropout=0.1)
        optimised = TrainConfig(backbone=args.backbone, model=number, batch_size=args.batch_size,
                                max_length=args.max_length, lora_dropout=0.0, packing=True)
        triplets, _ = split_triplets(earlier)
        rows = [[triplets[i] for i in batch_indices(len(triplets), args.batch_size, step, 0)]
                for step in range(args.batches)]
        encoded = None
        for label, config in (("padded, LoRA dropout 0.1 (earlier)", earlier),
                              ("packed, LoRA dropout 0 (optimised)", optimised)):
            m = measure(config, rows, args.repeats)
            if encoded is None:
                encoded = encode_seconds(m["backbone"], m["texts"], args.max_length, args.repeats)
            tokens = m["tokens"]
            print(f"{number:>5} {label:<38} {tokens / m['train']:>11.1f} {tokens / m['forward']:>13.1f} "
                  f"{tokens / encoded:>12.1f} {m['train'] / m['forward']:>14.2f} {m['train'] / encoded:>14.2f}")
            del m


if __name__ == "__main__":
    main()
