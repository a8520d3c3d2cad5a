"""Benchmark: training tokens/s against forward-only tokens/s of the same model, in one process.

Same model (backbone + LoRA + the design's head), same batches of SNLI triplets (query, positive, hard
negative, max_length as in training). Forward-only = the embedding forward without gradients; training
= forward with gradients, InfoNCE, backward and an AdamW step. Prints both and their ratio, which is
what budgets the step counts of the Paper 1 models.

    python benchmarks/train.py --model 5 --batch-size 16 --batches 6
"""

from __future__ import annotations

import argparse
import time

import torch

from repro.training.contrastive import Collator, TrainConfig, build_model, info_nce
from repro.training.data import batch_indices, split_triplets
from repro.training.loop import trainable_parameters


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--model", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--batches", type=int, default=6)
    args = parser.parse_args(argv)
    config = TrainConfig(backbone=args.backbone, model=args.model, batch_size=args.batch_size,
                         max_length=args.max_length, lora_dropout=0.1)
    model = build_model(config)
    collate = Collator(model.backbone.tokenizer, config)
    rows, _ = split_triplets(config)
    batches = []
    for step in range(args.batches):
        chunk = [rows[i] for i in batch_indices(len(rows), config.batch_size, step, config.seed)]
        batches.append((collate([r["query"] for r in chunk]),
                        collate([r["positive"] for r in chunk] + [r["negative"] for r in chunk])))
    tokens = sum(int(q[1].sum() + d[1].sum()) for q, d in batches)

    def forward_only():
        model.eval()
        with torch.no_grad():
            for (q_ids, q_mask), (d_ids, d_mask) in batches:
                model(q_ids, q_mask), model(d_ids, d_mask)

    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=config.lr)

    def training():
        model.train()
        for (q_ids, q_mask), (d_ids, d_mask) in batches:
            q, d = model(q_ids, q_mask), model(d_ids, d_mask)
            n = len(q)
            loss = info_nce(q, d[:n], d[n:], config.temperature)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()

    forward_only()  # warm-up
    start = time.perf_counter()
    forward_only()
    forward_seconds = time.perf_counter() - start
    start = time.perf_counter()
    training()
    train_seconds = time.perf_counter() - start
    print(f"{args.backbone}, model {args.model}, {args.batches} batches x {args.batch_size} triplets, "
          f"{tokens} tokens (max_length {args.max_length}), {torch.get_num_threads()} threads")
    print(f"forward only: {tokens / forward_seconds:8.1f} tok/s")
    print(f"training:     {tokens / train_seconds:8.1f} tok/s")
    print(f"ratio training / forward-only throughput: {forward_seconds / train_seconds:.3f} "
          f"(one training step costs {train_seconds / forward_seconds:.2f} forward passes)")


if __name__ == "__main__":
    main()
