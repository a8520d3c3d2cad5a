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

The ratio encode tok/s / training tok/s is the step's cost in **encoder-forward-equivalents** (the book's
target for a contrastive step: <= 3.5).

An **AutoRegEmbed stage-2 step** (the paper's loss, strategy 0: encoder passes for q and d+, decoder passes for
p(d+|q), p(d-|q) and p(d+|d+); full fine-tuning, batch 8, as the book trains it) is reported per pass: the
step's seconds, the forward-only seconds of each pass it needs on the same batch, and the step in
encoder-forward-equivalents of its tokens (encoder inputs + decoder targets), divided by its number of passes.

An **AutoRegEmbed stage-1 step** (reconstruction: one encoder pass over context + instruction + k compression
tokens, one frozen-decoder pass over the k memory states + the target; full fine-tuning, batch 8, 160 tokens, the
principled template) is measured padded (the earlier path: every row padded to the batch's longest input and
target, lm_head on every target position) and packed (padding-free rows, lm_head on real target positions only;
the same loss and gradients, ``tests/test_autoregembed.py``), in encoder-forward-equivalents of its tokens (the
floor for a forward and a backward of the encoder plus a forward and an input-gradient backward of the frozen
decoder is about 3).

    python benchmarks/train.py --models 1 5 --batch-size 16 --batches 6
    python benchmarks/train.py --models --no-autoreg --stage1 --batches 4   # the stage-1 step only
"""

from __future__ import annotations

import argparse
import time

import torch

from repro.autoregembed.config import AlignConfig
from repro.autoregembed.model import TextIds, build_autoreg
from repro.autoregembed.objectives import STRATEGY_TERMS, align_batch, reference_terms, sources_of, stack_rows
from repro.core.encode import EncodeConfig, encode
from repro.training.contrastive import Collator, TrainConfig, build_model
from repro.training.data import batch_indices, split_triplets
from repro.training.loop import trainable_parameters
from repro.training.objective import optimizer_step
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
            tokens += optimizer_step(model, collate, batch, config, optimizer)

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


def autoreg_steps(model, batches: list[dict], optimizer):
    """``() -> None``: one AutoRegEmbed training step (forward, backward, AdamW) on each of ``batches``."""
    def training():
        model.train()
        for batch in batches:
            model(batch).backward()
            optimizer.step()
            optimizer.zero_grad()
    return training


def measure_autoreg(rows: list[list[dict]], repeats: int, fused: bool = False) -> dict:
    """Seconds of AutoRegEmbed stage-2 steps and of each pass they need, forward only, on the same batches
    (a fresh stage-1 model: the cost does not depend on its weights; reference scores are zeros). ``fused``:
    one encoder and one decoder call per step."""
    config = AlignConfig(fused=fused)
    model = build_autoreg(config)
    texts = TextIds.of(model.backbone.tokenizer, config)
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=config.lr)
    batches = []
    for chunk in rows:
        batch = align_batch(texts, chunk[:config.batch_size], config, "cpu")
        batch["reference"] = {term: torch.zeros(len(chunk[:config.batch_size])) for term in reference_terms(0)}
        batches.append(batch)
    terms = STRATEGY_TERMS[config.strategy]

    training = autoreg_steps(model, batches, optimizer)

    passes: dict[str, float] = {}

    def forward_only():
        model.eval()
        with torch.no_grad():
            for batch in batches:
                start = time.perf_counter()
                if fused:
                    sources = sources_of(config.strategy)
                    n = batch["inputs"][sources[0]][0].shape[0]
                    stacked = model.memory(*stack_rows([batch["inputs"][s] for s in sources], batch["pad"]))
                    memories = {s: stacked[i * n:(i + 1) * n] for i, s in enumerate(sources)}
                    passes["encoder"] = passes.get("encoder", 0.0) + time.perf_counter() - start
                    start = time.perf_counter()
                    ids, mask = stack_rows([batch["targets"][t] for t, _ in terms], batch["pad"])
                    model.target_log_probs(torch.cat([memories[s] for _, s in terms]), ids, mask)
                    passes["decoder"] = passes.get("decoder", 0.0) + time.perf_counter() - start
                    continue
                memories = {s: model.memory(*batch["inputs"][s]) for s in sources_of(config.strategy)}
                passes["encoder"] = passes.get("encoder", 0.0) + time.perf_counter() - start
                for target, source in terms:
                    start = time.perf_counter()
                    model.target_log_probs(memories[source], *batch["targets"][target])
                    passes["decoder"] = passes.get("decoder", 0.0) + time.perf_counter() - start

    forward_only()
    passes.clear()
    forward = min(timed(forward_only) for _ in range(repeats))
    passes = {k: v / repeats for k, v in passes.items()}
    train = min(timed(training) for _ in range(repeats))
    encoder_tokens = sum(int(m.sum()) for b in batches for _, m in b["inputs"].values())
    target_tokens = sum(int(b["targets"][t][1].sum()) for b in batches for t, _ in terms)
    texts_in = [r[name] for chunk in rows for r in chunk[:config.batch_size] for name in ("query", "positive")]
    return {"train": train, "forward": forward, "passes": passes, "n_encoder": len(sources_of(config.strategy)),
            "n_decoder": len(terms), "encoder_tokens": encoder_tokens, "target_tokens": target_tokens,
            "k": config.compression_tokens, "batch": config.batch_size, "texts": texts_in,
            "backbone": model.backbone}


def measure_stage1(rows: list[list[dict]], repeats: int, packed: bool, backbone: str) -> dict:
    """Seconds of ``backbone``'s stage-1 training steps (forward, backward, AdamW) and of their no-gradient forward,
    on the same batches, padded or packed."""
    from repro.autoregembed.experiments.independent import stage1_config
    from repro.autoregembed.train import compress_batch

    config = stage1_config(0, backbone)
    model = build_autoreg(config)
    texts = TextIds.of(model.backbone.tokenizer, config)
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=config.lr)
    batches = [compress_batch(texts, chunk, "cpu", packed=packed) for chunk in rows]

    training = autoreg_steps(model, batches, optimizer)

    def forward_only():
        model.eval()
        with torch.no_grad():
            for batch in batches:
                model(batch)

    forward_only()  # warm-up
    forward = min(timed(forward_only) for _ in range(repeats))
    train = min(timed(training) for _ in range(repeats))
    k = config.compression_tokens
    real = sum(len(texts.stage1_input(r["context"], r["instruction"])) + len(texts.target(r["output"])) + 2 * k
               for chunk in rows for r in chunk)
    computed = sum(int(b["mask"].numel() + b["target_mask"].numel()) + 2 * k * b["mask"].shape[0]
                   for b in batches) if not packed else real
    return {"train": train, "forward": forward, "tokens": real, "computed": computed, "backbone": model.backbone,
            "texts": [r["context"] for chunk in rows for r in chunk]}


def report_stage1(batches: int, repeats: int, backbone: str) -> None:
    from repro.autoregembed.data import read_stage1

    stage1 = read_stage1()[64:]
    rows = [[stage1[i] for i in batch_indices(len(stage1), 8, step, 0)] for step in range(batches)]
    print(f"AutoRegEmbed stage 1 on {backbone} (full fine-tuning, batch 8, 160 tokens, k 5), {batches} steps, best "
          f"of {repeats}:")
    print(f"  {'path':<48} {'step s':>7} {'fwd s':>6} {'step/fwd':>8} {'train tok/s':>11} {'computed/real':>13} "
          f"{'encoder-fwd-eq':>14}")
    encode_rate, earlier = None, None
    for label, packed in (("padded (earlier)", False), ("packed, lm_head on real targets only", True)):
        m = measure_stage1(rows, repeats, packed, backbone)
        if encode_rate is None:
            encoded = encode_seconds(m["backbone"], m["texts"], 160, repeats)
            encode_rate = sum(min(len(m["backbone"].tokenizer(t).input_ids), 160) for t in m["texts"]) / encoded
        step = m["train"] / batches
        print(f"  {label:<48} {step:>7.2f} {m['forward'] / batches:>6.2f} {m['train'] / m['forward']:>8.2f} "
              f"{m['tokens'] / m['train']:>11.1f} {m['computed'] / m['tokens']:>13.2f} "
              f"{m['train'] * encode_rate / m['tokens']:>14.2f}")
        earlier = earlier or step
        del m
    print(f"  encode (repro.encode, same contexts): {encode_rate:.1f} tok/s | packed step = {step / earlier:.2f}x "
          f"the padded step's seconds ({earlier / step:.2f}x faster)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--models", nargs="*", type=int, default=[1, 5])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=2, help="best of this many timings")
    parser.add_argument("--autoreg", action=argparse.BooleanOptionalAction, default=True,
                        help="also measure an AutoRegEmbed stage-2 step per pass")
    parser.add_argument("--stage1", action=argparse.BooleanOptionalAction, default=True,
                        help="also measure an AutoRegEmbed stage-1 step, padded and packed")
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
    if args.autoreg:
        triplets, _ = split_triplets(TrainConfig(backbone=args.backbone))
        rows = [[triplets[i] for i in batch_indices(len(triplets), args.batch_size, step, 0)]
                for step in range(args.batches)]
        encode_rate = None
        for fused in (False, True):
            m = measure_autoreg(rows, args.repeats, fused)
            n_batches = len(rows)
            tokens = m["encoder_tokens"] + m["target_tokens"] + m["k"] * m["batch"] * m["n_decoder"] * n_batches
            if encode_rate is None:
                encoded = encode_seconds(m["backbone"], m["texts"], args.max_length, args.repeats)
                encode_rate = sum(len(m["backbone"].tokenizer(t).input_ids) for t in m["texts"]) / encoded
            passes = m["n_encoder"] + m["n_decoder"]
            equivalents = m["train"] * encode_rate / tokens
            print(f"AutoRegEmbed stage 2, {'fused: one encoder + one decoder call' if fused else 'one call per pass'}"
                  f" (strategy 0, full fine-tuning, batch {m['batch']}, k {m['k']}): {m['n_encoder']} encoder + "
                  f"{m['n_decoder']} decoder passes per step, {tokens} tokens in {n_batches} steps")
            print(f"  step {m['train'] / n_batches:.2f} s | forward only {m['forward'] / n_batches:.2f} s "
                  f"(encoder passes {m['passes']['encoder'] / n_batches:.2f} s, decoder passes "
                  f"{m['passes']['decoder'] / n_batches:.2f} s) | step / forward-only "
                  f"{m['train'] / m['forward']:.2f}")
            print(f"  training {tokens / m['train']:.1f} tok/s | encode {encode_rate:.1f} tok/s | step = "
                  f"{equivalents:.2f} encoder-forward-equivalents = {equivalents / passes:.2f} per pass")
            del m
    if args.stage1:
        report_stage1(args.batches, args.repeats, args.backbone)


if __name__ == "__main__":
    main()
