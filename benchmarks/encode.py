"""Benchmark: our all-layer encoder vs the naive loop, in one process, on the same texts.

Prints
  (a) tokens/s of ``repro.core.encode`` (one decoder forward for all hidden states, no lm_head, length-sorted
      batches) vs a naive loop as the official repos do per-layer scoring (HF AutoModelForCausalLM with
      lm_head computed, batches in input order, one full forward per layer), and their ratio;
  (b) our tokens/s as a fraction of the roofline implied by a measured fp32 GEMM on this machine;
  (c) peak RSS of the process;
  (d) the padding-free packed path (short texts side by side in rows of ``--rows`` tokens, positions restarted, a
      block-diagonal mask: the default) against the padded path (every batch right-padded), the best of
      ``--repeats`` timed passes each after a warm-up, their ratio and each one's fraction of the roofline.

    python benchmarks/encode.py --backbone smollm2-135m --texts 200

Run it on a quiet machine (pause long runs with SIGSTOP): other work on the cores changes every figure.

``--processes``: instead, 2 processes x 1 thread (torchrun, gloo) against 1 process x 2 threads on the same texts,
each from a cold states cache (tokens/s over the encode call, model loading excluded), and their ratio:

    python benchmarks/encode.py --processes --texts 2000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from repro.core.backbones import load_backbone
from repro.core.encode import EncodeConfig, Tokenizer, encode
from repro.core.packing import ROW_TOKENS
from repro.core.prompts import get_prompt
from repro.core.tasks import read_task


def gemm_gflops(n: int = 1024, repeats: int = 20) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        a @ b
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * n ** 3 * repeats / (time.perf_counter() - start) / 1e9


def decoder_flops_per_token(backbone, mean_len: float) -> float:
    """2 x (non-embedding parameters) + attention scores/values (4 x layers x d x context)."""
    decoder = backbone.decoder
    params = sum(p.numel() for p in decoder.parameters()) - decoder.get_input_embeddings().weight.numel()
    return 2 * params + 4 * backbone.num_layers * backbone.hidden_size * mean_len


@torch.inference_mode()
def naive_all_layers(backbone, texts, batch_size: int, config: EncodeConfig):
    """One full causal-LM forward (lm_head included) per layer, batches in input order."""
    tokenize = Tokenizer(backbone.tokenizer, get_prompt(config.prompt), config)
    items = [tokenize(t).ids for t in texts]
    pad = backbone.tokenizer.pad_token_id or 0
    out = []
    for layer in range(backbone.num_layers + 1):
        for i in range(0, len(items), batch_size):
            batch = items[i:i + batch_size]
            width = max(map(len, batch))
            ids = torch.full((len(batch), width), pad)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for r, seq in enumerate(batch):
                ids[r, :len(seq)] = torch.tensor(seq)
                mask[r, :len(seq)] = 1
            result = backbone.model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
            out.append(result.hidden_states[layer][torch.arange(len(batch)), mask.sum(1) - 1])
    return out


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2


def sts_texts(n: int) -> list[str]:
    data = read_task("STSBenchmark", "full")["test"]
    return list(dict.fromkeys(data["sentence1"] + data["sentence2"]))[:n]


def worker(backbone_name: str, n: int, cache: str, out: str) -> None:
    """One rank of a timed encode (under torchrun, or alone): writes its timing to ``out``.<rank>.json."""
    from repro.core.distributed import barrier, init_from_env

    rank, size = init_from_env()
    texts = sts_texts(n)
    backbone = load_backbone(backbone_name)
    config = EncodeConfig(prompt="none", poolings=("last",))
    barrier()
    start = time.perf_counter()
    encode(backbone, texts, config, cache_root=Path(cache), chunk_size=max(1, len(texts) // 16), progress=False)
    barrier()
    seconds = time.perf_counter() - start
    tokenize = Tokenizer(backbone.tokenizer, get_prompt(config.prompt), config)
    Path(f"{out}.{rank}.json").write_text(json.dumps({
        "seconds": seconds, "tokens": sum(len(tokenize(t).ids) for t in texts), "processes": size,
        "threads": torch.get_num_threads()}))


def compare_processes(backbone: str, n: int) -> None:
    """2 processes x 1 thread vs 1 process x 2 threads, measured here in one run."""
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for processes, threads in ((1, 2), (2, 1)):
            env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
            env["OMP_NUM_THREADS"] = str(threads)
            launcher = [sys.executable] if processes == 1 else [
                sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}"]
            out = f"{tmp}/timing{processes}"
            subprocess.run(launcher + [__file__, "--worker", "--backbone", backbone, "--texts", str(n),
                                       "--cache", f"{tmp}/cache{processes}", "--out", out], env=env, check=True)
            results[processes] = json.loads(Path(f"{out}.0.json").read_text())
    one, two = results[1], results[2]
    rate = {p: r["tokens"] / r["seconds"] for p, r in results.items()}
    print(f"backbone {backbone}: {n} STS-B sentences, {one['tokens']} tokens, cold cache, 16 chunks")
    print(f"1 process x {one['threads']} threads: {rate[1]:.0f} tok/s ({one['seconds']:.2f} s)")
    print(f"{two['processes']} processes x {two['threads']} thread: {rate[2]:.0f} tok/s ({two['seconds']:.2f} s)")
    print(f"ratio (2 processes / 1 process): {rate[2] / rate[1]:.2f}x")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--texts", type=int, default=96, help="STS-B test sentences to encode")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rows", type=int, nargs="+", default=[32, 64, 128], help="packed row widths to time")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per path (the best is kept)")
    parser.add_argument("--skip-naive", action="store_true", help="only (b) and (d)")
    parser.add_argument("--processes", action="store_true", help="2 processes x 1 thread vs 1 process x 2 threads")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.backbone, args.texts, args.cache, args.out)
    if args.processes:
        return compare_processes(args.backbone, args.texts)

    texts = sts_texts(args.texts)
    backbone = load_backbone(args.backbone)
    config = EncodeConfig(prompt="none", poolings=("last",))
    tokenize = Tokenizer(backbone.tokenizer, get_prompt(config.prompt), config)
    tokens = sum(len(tokenize(t).ids) for t in texts)

    def rate(row_tokens) -> float:
        encode(backbone, texts[: max(1, len(texts) // 4)], config, cache=False, progress=False,
               row_tokens=row_tokens)  # warm-up
        best = float("inf")
        for _ in range(args.repeats):
            start = time.perf_counter()
            encode(backbone, texts, config, cache=False, progress=False, row_tokens=row_tokens)
            best = min(best, time.perf_counter() - start)
        return tokens / best

    print(f"backbone {args.backbone}: {len(texts)} texts, {tokens} tokens, "
          f"{backbone.num_layers + 1} hidden states, torch threads {torch.get_num_threads()}")
    ours = rate(ROW_TOKENS)
    rss_ours = peak_rss_gb()
    gflops = gemm_gflops()
    roofline = gflops * 1e9 / decoder_flops_per_token(backbone, tokens / len(texts))
    if not args.skip_naive:
        start = time.perf_counter()
        naive_all_layers(backbone, texts, args.batch_size, config)
        naive = tokens / (time.perf_counter() - start)
        print(f"(a) ours {ours:.0f} tok/s | naive (lm_head, unsorted, one forward per layer) {naive:.1f} tok/s "
              f"| ratio {ours / naive:.1f}x")
    print(f"(b) fp32 GEMM {gflops:.1f} GFLOP/s -> roofline {roofline:.0f} tok/s | ours (packed, rows of "
          f"{ROW_TOKENS}) = {ours / roofline:.0%} of roofline")
    print(f"(c) peak RSS after our encode {rss_ours:.2f} GB" + ("" if args.skip_naive else
                                                                 f"; after the naive loop {peak_rss_gb():.2f} GB"))
    padded = rate(None)
    print(f"(d) padded {padded:.0f} tok/s ({padded / roofline:.0%} of roofline)")
    for width in args.rows:
        packed = rate(width)
        print(f"    packed, rows of {width}: {packed:.0f} tok/s ({packed / roofline:.0%} of roofline) | "
              f"packed / padded {packed / padded:.2f}x")


if __name__ == "__main__":
    main()
