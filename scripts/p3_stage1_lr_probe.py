"""Why the book's AutoRegEmbed stage 1 uses a learning rate far above the official code's 1e-5.

Trains stage 1 (repro.autoregembed.method.train_compression, the real code path) for a few steps at each learning
rate and prints the held-out reconstruction loss (token-mean cross-entropy, nats) before and after, next to
the loss of the same frozen decoder given an uninformative memory (the k compression-token embeddings of
the untrained model, identical for every text): a stage 1 that learns to compress goes below that line.

    .venv/bin/python scripts/p3_stage1_lr_probe.py                 # 2e-5 1e-4 5e-4, 100 steps each
    .venv/bin/python scripts/p3_stage1_lr_probe.py --lrs 1e-4 --steps 20
    .venv/bin/python scripts/p3_stage1_lr_probe.py --lrs 5e-4 --max-grad-norm 0   # without clipping

Each learning rate trains in a temporary folder (not stored); ~15 min per rate on one core.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path


def main(argv=None) -> None:
    from repro.autoregembed.config import CompressConfig
    from repro.autoregembed.experiments.stage1 import uninformative_reconstruction
    from repro.autoregembed.train import train_compression

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--lrs", type=float, nargs="+", default=[2e-5, 1e-4, 5e-4])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--validation-examples", type=int, default=16)
    parser.add_argument("--max-grad-norm", type=float, default=1.0, help="gradient-norm clipping; 0: off")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.batch_size < 1 or args.validation_examples < 1:
        parser.error("--steps, --batch-size and --validation-examples must be positive")

    base = dict(backbone=args.backbone, steps=args.steps, batch_size=args.batch_size, finetune="full",
                max_length=160, warmup_steps=min(5, args.steps - 1), validation_examples=args.validation_examples,
                eval_every=args.steps, checkpoint_every=10 ** 9, max_grad_norm=args.max_grad_norm or None,
                template="book")  # the stored probe's inputs
    print(f"{args.backbone}, {args.steps} steps x {args.batch_size}, held-out {args.validation_examples} examples, "
          f"gradient-norm clipping {args.max_grad_norm or 'off'}")
    reference = uninformative_reconstruction(CompressConfig(**base))  # stored (results/autoreg_uninformative)
    print(f"held-out loss of an uninformative memory: {reference:.3f} nats/token")
    for lr in args.lrs:
        with tempfile.TemporaryDirectory() as folder:
            train_compression(CompressConfig(**base, lr=lr), folder, progress=False)
            history = json.loads((Path(folder) / "summary.json").read_text())["history"]
        losses = [h["validation_loss"] for h in history if h.get("validation_loss") is not None]
        train = [h["train_loss"] for h in history if "lr" in h]  # one row per step (validation rows repeat it)
        tail = train[-10:]
        print(f"lr {lr:g}: held-out loss {losses[0]:.3f} -> {losses[-1]:.3f}; training loss, mean of the last "
              f"{len(tail)} steps: {sum(tail) / len(tail):.3f}")


if __name__ == "__main__":
    main()
