"""Benchmark: the whole EmbedFilter sweep vs ONE plain encode of the same texts, in one process.

Baseline: encode the suite's texts once (raw embeddings; no cache). Sweep: everything needed for the
embeddings of every variant of the sweep (raw, edge at ratios 1/2/4/8, tail/head/mid/rand, truncation,
PCA whitening and random projection at ratio 2): one encode of the same texts, the SVD of ``lm_head``
(recomputed, not read from its cache), the whitening fit (encoding its NLI sentences) and every map applied
to the states. Scoring with mteb is the same per variant either way and is not part of either side.
Target: sweep / plain encode <= 1.1.

    python benchmarks/embedfilter_sweep.py --backbone smollm2-135m --prompt prompteol --suite compact \\
        --tasks STS12 STS13 STS14 STS15 STS16 STS17 STSBenchmark SICK-R BIOSSES SciFact
"""

from __future__ import annotations

import argparse
import time

from repro.core.backbones import load_backbone
from repro.core.encode import count_tokens, encode
from repro.core.samples import nli_sentences, task_texts
from repro.core.tasks import TASKS
from repro.embedfilter.filters import make_filter, sweep_variants, unembedding_spectrum
from repro.embedfilter.sweep import encode_config

DEFAULT_TASKS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STS17", "STSBenchmark", "SICK-R", "BIOSSES", "SciFact"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--prompt", default="prompteol")
    parser.add_argument("--suite", default="compact")
    parser.add_argument("--tasks", nargs="*", default=DEFAULT_TASKS)
    parser.add_argument("--whiten-sentences", type=int, default=2000)
    args = parser.parse_args(argv)
    for name in args.tasks:
        if name not in TASKS:
            raise SystemExit(f"unknown task '{name}'")

    backbone = load_backbone(args.backbone)
    config = encode_config(backbone, args.prompt)
    pooling = config.poolings[0]
    texts = sorted({t for name in args.tasks for t in task_texts(name, args.suite)})
    fit_texts = nli_sentences(args.whiten_sentences)
    tokens = count_tokens(backbone, texts, config)
    print(f"{args.backbone} / {args.prompt} / {args.suite}: {len(texts)} texts, {tokens} tokens "
          f"({len(args.tasks)} tasks); whitening fit: {len(fit_texts)} NLI sentences, "
          f"{count_tokens(backbone, fit_texts, config)} tokens")

    start = time.perf_counter()
    encode(backbone, texts, config, cache=False, progress=False)
    plain = time.perf_counter() - start

    start = time.perf_counter()
    states = encode(backbone, texts, config, cache=False, progress=False)[pooling][0]
    after_encode = time.perf_counter()
    spectrum = unembedding_spectrum(backbone, cache=False)
    after_svd = time.perf_counter()
    fit = encode(backbone, fit_texts, config, cache=False, progress=False)[pooling][0]
    after_fit = time.perf_counter()
    variants = sweep_variants()
    outputs = {}
    for name in variants:
        fmap = make_filter(name, spectrum=spectrum, whitening_states=fit, d=backbone.hidden_size)
        outputs[name] = states if fmap is None else fmap(states)
    end = time.perf_counter()
    sweep = end - start

    print(f"plain encode:            {plain:8.1f} s")
    print(f"sweep ({len(variants)} variants):     {sweep:8.1f} s  = encode {after_encode - start:.1f} + SVD "
          f"{after_svd - after_encode:.1f} + whitening fit encode {after_fit - after_svd:.1f} + "
          f"maps {end - after_fit:.2f}")
    ratio = sweep / plain
    print(f"ratio sweep / plain encode: {ratio:.3f}  (target <= 1.1: {'met' if ratio <= 1.1 else 'NOT met'})")
    print(f"ratio without the whitening baseline's fit: {(sweep - (after_fit - after_svd)) / plain:.3f}")


if __name__ == "__main__":
    main()
