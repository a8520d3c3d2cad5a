"""Benchmark: our all-layer encoder vs the naive loop, in one process, on the same texts.

Prints
  (a) tokens/s of ``repro.core.encode`` (one decoder forward for all hidden states, no lm_head, length-sorted
      batches) vs a naive loop as the official repos do per-layer scoring (HF AutoModelForCausalLM with
      lm_head computed, batches in input order, one full forward per layer), and their ratio;
  (b) our tokens/s as a fraction of the roofline implied by a measured fp32 GEMM on this machine;
  (c) peak RSS of the process.

    python benchmarks/encode.py --backbone smollm2-135m --texts 96
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from repro.core.backbones import load_backbone
from repro.core.encode import EncodeConfig, Tokenizer, encode
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--texts", type=int, default=96, help="STS-B test sentences to encode")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)

    data = read_task("STSBenchmark", "full")["test"]
    texts = list(dict.fromkeys(data["sentence1"] + data["sentence2"]))[: args.texts]
    backbone = load_backbone(args.backbone)
    config = EncodeConfig(prompt="none", poolings=("last",))
    tokenize = Tokenizer(backbone.tokenizer, get_prompt(config.prompt), config)
    tokens = sum(len(tokenize(t).ids) for t in texts)

    start = time.perf_counter()
    encode(backbone, texts, config, cache=False, progress=False)
    ours = tokens / (time.perf_counter() - start)
    rss_ours = peak_rss_gb()

    start = time.perf_counter()
    naive_all_layers(backbone, texts, args.batch_size, config)
    naive = tokens / (time.perf_counter() - start)

    gflops = gemm_gflops()
    roofline = gflops * 1e9 / decoder_flops_per_token(backbone, tokens / len(texts))
    print(f"backbone {args.backbone}: {len(texts)} texts, {tokens} tokens, "
          f"{backbone.num_layers + 1} hidden states, torch threads {torch.get_num_threads()}")
    print(f"(a) ours {ours:.0f} tok/s | naive (lm_head, unsorted, one forward per layer) {naive:.1f} tok/s "
          f"| ratio {ours / naive:.1f}x")
    print(f"(b) fp32 GEMM {gflops:.1f} GFLOP/s -> roofline {roofline:.0f} tok/s | ours = "
          f"{ours / roofline:.0%} of roofline")
    print(f"(c) peak RSS after our encode {rss_ours:.2f} GB; after the naive loop {peak_rss_gb():.2f} GB")


if __name__ == "__main__":
    main()
