"""How fast each leaderboard method encodes on this machine: text tokens per second through the method's own
Embedder, every method on the same texts, in one process, each call from an empty states cache.

Speed depends on what a method runs, not on the values of its trained weights: the prompt around the text,
Echo's second copy, causal or bidirectional attention, LoRA adapters (merged into a copy at the first encode since
2026-12-03, :func:`repro.training.lora.merged_for_inference`; rates stored before were timed unmerged), a pooling
head over one layer or all of them, compression tokens, the filter's matrix product. So a trained method is timed with a freshly built
model of exactly its configuration (:func:`repro.training.contrastive.build_model`,
:func:`repro.autoregembed.model.build_autoreg`): nothing is trained or loaded from ``weights/`` to time it, and a
method's rate can be stored before its scores are.

* The texts: STS-B test sentences (role ``query``) and SciFact corpus documents (role ``document``, titles
  joined), deterministic; the rate counts the texts' own tokens as the backbone's tokenizer counts them (prompt
  and special tokens excluded), the same numerator for every method, MiniLM included, so rates compare
  methods on the same work.
* Rounds: every method once per round, in the same order, ``repeats`` rounds; each method's rate is the median
  over its rounds, and its ratio is against the untrained last token measured in the same round (the baseline
  of every ratio; contention that drifts over a run then cancels in the ratio).

:func:`measure` computes, :func:`stored_rates` reads (the leaderboard's cost figure), and
``python benchmarks/encode_rates.py`` runs it and stores the result with its machine provenance.
"""

from __future__ import annotations

import gc
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np
import pandas as pd

from repro.autoregembed.experiments.baselines import CONTRASTIVE, contrastive_config
from repro.autoregembed.experiments.configs import page_configs
from repro.autoregembed.experiments.scores import embedder_of
from repro.autoregembed.model import build_autoreg
from repro.core.backbones import resolve
from repro.core.encode import forget_recent
from repro.core.reference import load_minilm
from repro.core.tasks import read_task
from repro.crosspaper.leaderboard_paper3 import baseline_label
from repro.pages.parameters import page_parameters
from repro.pooling_attention.trained import converged_config
from repro.recipes.recipe import from_recipe
from repro.store.paths import STATES_ENV
from repro.store.results import all_results, save_result
from repro.training.contrastive import TrainedEmbedder, build_model

EXPERIMENT = "encode_rates"
BASELINE = "last"
# rate key -> the method it times, described (stored beside each rate); the leaderboard joins a row to its rate by
# this key (repro.crosspaper.leaderboard.Row.rate), never by a label
LABELS = {
    "last": "last token (untrained)",
    "mean": "mean (untrained)",
    "prompteol": "PromptEOL",
    "prompteol+edge/2": "PromptEOL + EmbedFilter edge/2",
    "echo": "Echo",
    "echo+edge/2": "Echo + EmbedFilter edge/2",
    **{f"p1-model{m}": f"Paper 1 model {m} " for m in (1, 2, 3, 4, 5)},
    "p3-compress": "compression only (Paper 3)",
    "p3-align": "AutoRegEmbed (Paper 3)",
    **{f"p3-{name}": baseline_label(name) for name in CONTRASTIVE},
    "minilm": "all-MiniLM-L6-v2 (reference)",
}
Encode = Callable[[list[str], str], np.ndarray]  # (texts, role) -> embeddings


def rate_texts(sentences: int = 256, documents: int = 32) -> tuple[list[str], list[str]]:
    """The timed texts: the first distinct STS-B test sentences and the first SciFact corpus documents."""
    sts = read_task("STSBenchmark", "full")["test"]
    corpus = read_task("SciFact", "compact")["corpus"]
    docs = [f"{title} {text}".strip() for title, text in zip(corpus["title"], corpus["text"])]
    return list(dict.fromkeys(sts["sentence1"] + sts["sentence2"]))[:sentences], docs[:documents]


def _paper3_configs(backbone: str):
    params = page_parameters("p3_tables", "standard") | {"backbone": backbone, "recompute": False}
    return page_configs(**params)


def rate_encoder(key: str, backbone: str) -> Encode:
    """The encode function a rate key times, built without training (module docstring)."""
    if key not in LABELS:
        raise ValueError(f"unknown encode-rate method {key!r}; known: {', '.join(LABELS)}")
    if key == "minilm":
        model = load_minilm()
        return lambda texts, role: model.encode(texts, batch_size=32)
    if key in ("p3-compress", "p3-align"):
        config = _paper3_configs(backbone)[0 if key == "p3-compress" else 1]
        model = build_autoreg(config)
        model.decoder = None  # the frozen decoder is read only in training; encoding never runs it
        embedder = embedder_of(model.eval(), config, 512)
    elif key.startswith(("p1-model", "p3-")):  # a Paper 1 design or a Paper 3 contrastive baseline
        config = (converged_config(backbone, int(key[len("p1-model"):])) if key.startswith("p1-model") else
                  contrastive_config(key[3:], _paper3_configs(backbone)[1]))
        embedder = TrainedEmbedder(build_model(config).eval(), config, max_length=512)
    else:
        embedder = from_recipe(f"{backbone}/{key}")
    return lambda texts, role: embedder.encode(texts, role=role)


@contextmanager
def _empty_states_cache():
    """An empty states cache folder and no in-memory memo of recent encodes: the encode inside is cold."""
    previous = os.environ.get(STATES_ENV)
    forget_recent()
    with tempfile.TemporaryDirectory(prefix="repro-rates-") as folder:
        os.environ[STATES_ENV] = folder
        try:
            yield
        finally:
            forget_recent()
            if previous is None:
                os.environ.pop(STATES_ENV, None)
            else:
                os.environ[STATES_ENV] = previous


def time_encode(encode: Encode, sentences: list[str], documents: list[str]) -> float:
    """Seconds to encode the sentences (query) and the documents (document), from an empty states cache, after
    one untimed call on other texts (the first forward's allocations)."""
    with _empty_states_cache():
        encode(["a warm-up sentence that is not timed.", "another one."], "query")
    with _empty_states_cache():
        start = time.perf_counter()
        encode(sentences, "query")
        encode(documents, "document")
        return time.perf_counter() - start


def text_tokens(backbone: str, texts: list[str]) -> int:
    from transformers import AutoTokenizer  # (here: the leaderboard page imports this module to read rates)

    tokenizer = AutoTokenizer.from_pretrained(resolve(backbone)[0])
    return sum(len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"])


def measure(backbone: str = "smollm2-135m", keys: list[str] | None = None, repeats: int = 3,
            sentences: int = 256, documents: int = 32, progress: bool = True) -> pd.DataFrame:
    """One row per method: median seconds over ``repeats`` rounds, text tokens/s, and the median over rounds of
    its time ratio to the untrained last token of the same round (> 1: faster than the last token)."""
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    keys = list(LABELS) if keys is None else list(keys)
    for key in keys:
        if key not in LABELS:
            raise ValueError(f"unknown encode-rate method {key!r}; known: {', '.join(LABELS)}")
    keys = [BASELINE] + [k for k in keys if k != BASELINE]
    sents, docs = rate_texts(sentences, documents)
    tokens = text_tokens(backbone, sents + docs)
    seconds: dict[str, list[float]] = {k: [] for k in keys}
    for round_ in range(repeats):
        for key in keys:
            encode = rate_encoder(key, backbone)
            seconds[key].append(time_encode(encode, sents, docs))
            del encode
            gc.collect()
            if progress:
                print(f"round {round_ + 1}/{repeats} {key}: {seconds[key][-1]:.1f} s", flush=True)
    rows = []
    for key in keys:
        median = statistics.median(seconds[key])
        ratio = statistics.median(b / s for b, s in zip(seconds[BASELINE], seconds[key]))
        rows.append({"method": key, "label": LABELS[key], "seconds": median, "seconds per round": seconds[key],
                     "text tokens": tokens, "text tokens/s": tokens / median, "speed vs last token": ratio})
    return pd.DataFrame(rows)


def store(rates: pd.DataFrame, backbone: str, repeats: int, sentences: int, documents: int,
          total_seconds: float) -> None:
    params = {"backbone": backbone, "repeats": repeats, "sentences": sentences, "documents": documents,
              "methods": sorted(rates["method"])}
    save_result(EXPERIMENT, params, rates, timings={"total_seconds": total_seconds},
                extra={"texts": "STS-B test sentences (query) + SciFact corpus documents (document)",
                       "threads": int(os.environ.get("OMP_NUM_THREADS") or 0) or None})


def stored_rates(backbone: str = "smollm2-135m") -> pd.DataFrame:
    """The latest stored measurement for ``backbone`` (empty when none): one row per method."""
    records = all_results(EXPERIMENT, where=lambda p: p["backbone"] == backbone)
    if not records:
        return pd.DataFrame(columns=["method", "label", "seconds", "text tokens/s", "speed vs last token"])
    latest = max(records, key=lambda r: r["provenance"]["date"])
    return pd.DataFrame(latest["rows"])


def rates_by_row(rows: pd.DataFrame, backbone: str = "smollm2-135m") -> pd.Series:
    """Stored text tokens/s for each leaderboard row (``rows`` of :func:`repro.crosspaper.leaderboard.leaderboard_runs`,
    indexed by id), through its encode-rate key (``rows.rate``); NaN where the row has no key or the stored
    measurement lacks it."""
    rates = stored_rates(backbone)
    by_key = dict(zip(rates["method"], rates["text tokens/s"].astype(float)))
    return pd.Series([by_key.get(key, np.nan) if isinstance(key, str) else np.nan for key in rows["rate"]],
                     index=rows.index, name="text tokens/s", dtype=float)


def describe_rates(backbone: str = "smollm2-135m") -> str:
    """One sentence giving the stored measurement's scale and machine (or the command that measures it)."""
    records = [r for r in all_results(EXPERIMENT) if r["params"]["backbone"] == backbone]
    if not records:
        return (f"No encode rate is stored for {backbone} yet (`python benchmarks/encode_rates.py --backbone "
                f"{backbone}` measures them); the third panel is empty.")
    record = max(records, key=lambda r: r["provenance"]["date"])
    p, machine = record["params"], record["provenance"]["machine"]
    rows = pd.DataFrame(record["rows"]).set_index("method")
    gemm = machine.get("gemm_gflops_fp32")
    return (f"Encode rates measured {record['provenance']['date'][:10]} on {machine.get('cpu_model') or 'unknown CPU'} "
            f"({machine.get('cpus')} CPUs{f', {gemm:.0f} GFLOP/s fp32 GEMM' if gemm else ''}), one process: "
            f"{p['sentences']} sentences + {p['documents']} documents ({int(rows['text tokens'].iloc[0])} text "
            f"tokens), the median of {p['repeats']} round{'s' if p['repeats'] != 1 else ''}; the untrained last "
            f"token encodes {rows.loc[BASELINE, 'text tokens/s']:.0f} text tokens/s.")
