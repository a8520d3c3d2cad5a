"""Peak memory and step time of AutoRegEmbed's alignment objective against contrastive InfoNCE, at equal
batch size (the paper: alignment needs B comparisons per batch instead of B^2).

Each measurement runs in a fresh process (so the peak resident memory, ``ru_maxrss``, belongs to it alone):
the model is built, then ``steps`` optimizer steps on the same NLI triplets; reported are the peak memory
above the loaded model, the median step time (first step excluded) and the number of similarity
comparisons the loss makes. Both objectives train the same LoRA adapters (r=16) on the same backbone; the
alignment's reference scores are zeros here (they change the loss value, not its cost).

    python -m repro.autoregembed.objective_cost --objective align --batch-size 8
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import torch

from repro.autoregembed.config import AlignConfig
from repro.autoregembed.model import TextIds, build_autoreg
from repro.autoregembed.objectives import align_batch, alignment_loss, reference_terms
from repro.store.results import load_or_compute
from repro.training.contrastive import Collator, TrainConfig, build_model
from repro.training.data import read_triplets
from repro.training.objective import info_nce

OBJECTIVES = ("contrastive", "align")


def comparisons(objective: str, batch_size: int) -> int:
    """Similarity scores per batch: InfoNCE compares each query with every positive and hard negative of the
    batch (B x 2B); alignment scores each query against its own positive and negative (B x 2)."""
    return batch_size * 2 * batch_size if objective == "contrastive" else batch_size * 2


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def measure_here(objective: str, batch_size: int, backbone: str, steps: int, max_length: int) -> dict:
    """Run in THIS process (use :func:`measure` for a fresh one)."""

    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective '{objective}'; valid: {', '.join(OBJECTIVES)}")
    rows = read_triplets("nli")
    torch.manual_seed(0)
    if objective == "contrastive":

        config = TrainConfig(backbone=backbone, model=1, batch_size=batch_size, max_length=max_length)
        model = build_model(config)
        collate = Collator(model.backbone.tokenizer, config)

        def loss_of(chunk):
            q = model(*collate([r["query"] for r in chunk]))
            d = model(*collate([r["positive"] for r in chunk] + [r["negative"] for r in chunk]))
            return info_nce(q, d[:len(chunk)], d[len(chunk):], config.temperature)
    else:

        config = AlignConfig(compress=None, backbone=backbone, finetune="lora", batch_size=batch_size,
                             max_length=max_length, template="book")  # the stored measurements' inputs
        model = build_autoreg(config)
        texts = TextIds.of(model.backbone.tokenizer, config)

        def loss_of(chunk):
            batch = align_batch(texts, chunk, config, "cpu")
            batch["reference"] = {term: torch.zeros(len(chunk)) for term in reference_terms(config.strategy)}
            return alignment_loss(model, batch)

    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    model.train()
    loaded = _rss_mb()
    times = []
    for step in range(steps):
        chunk = rows[step * batch_size:(step + 1) * batch_size]
        start = time.perf_counter()
        loss = loss_of(chunk)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        times.append(time.perf_counter() - start)
    return {"objective": objective, "batch_size": batch_size, "backbone": backbone, "steps": steps,
            "max_length": max_length, "comparisons": comparisons(objective, batch_size),
            "peak_mb_above_model": _rss_mb() - loaded, "model_mb": loaded,
            "step_seconds": float(np.median(times[1:] if len(times) > 1 else times)),
            "threads": torch.get_num_threads()}


def measure(objective: str, batch_size: int, backbone: str = "smollm2-135m", steps: int = 4,
            max_length: int = 64) -> dict:
    """:func:`measure_here` in a fresh Python process."""
    cmd = [sys.executable, "-m", "repro.autoregembed.objective_cost", "--objective", objective, "--batch-size", str(batch_size),
           "--backbone", backbone, "--steps", str(steps), "--max-length", str(max_length)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def objective_costs(batch_sizes, backbone: str = "smollm2-135m", steps: int = 4, max_length: int = 64,
                    recompute: bool = False):
    """Stored measurements (``results/autoreg_cost``) for every objective x batch size."""

    frames = []
    for objective in OBJECTIVES:
        for batch_size in batch_sizes:
            params = {"objective": objective, "batch_size": batch_size, "backbone": backbone, "steps": steps,
                      "max_length": max_length}

            def compute(objective=objective, batch_size=batch_size):
                row = measure(objective, batch_size, backbone, steps, max_length)
                row["load_average"] = os.getloadavg()[0]  # other work on the machine inflates the times
                return pd.DataFrame([row]), {}, {}

            frames.append(pd.DataFrame(load_or_compute("autoreg_cost", params, compute, recompute)["rows"]))
    return pd.concat(frames, ignore_index=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objective", choices=OBJECTIVES, required=True)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=64)
    args = parser.parse_args(argv)
    print(json.dumps(measure_here(args.objective, args.batch_size, args.backbone, args.steps, args.max_length)))


if __name__ == "__main__":
    main()
