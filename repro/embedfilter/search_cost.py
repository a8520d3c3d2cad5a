"""What fewer dimensions buy: index size and brute-force search time, measured.

Exact (brute-force) cosine search over unit vectors: one ``queries @ corpusᵀ`` product and a top-k
selection. Its cost depends only on the shapes, so it is measured on seeded random unit vectors with the
corpus sizes given, for the embedding widths an EmbedFilter ratio leaves (``d // ratio``).
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from repro.store.results import load_covering, load_or_compute, load_result

EXPERIMENT = "embedfilter_cost"


def _unit(rng, n: int, k: int) -> np.ndarray:
    x = rng.standard_normal((n, k), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def brute_force_seconds(corpus: np.ndarray, queries: np.ndarray, top: int = 10, repeats: int = 5) -> float:
    """Median wall time of exact top-``top`` search of all queries (one matrix product + argpartition)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        scores = queries @ corpus.T
        np.argpartition(-scores, top, axis=1)[:, :top]
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def measure(widths: Sequence[int], corpus_sizes: Sequence[int] = (10_000, 100_000), n_queries: int = 256,
            top: int = 10, repeats: int = 5, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for n in corpus_sizes:
        for k in widths:
            corpus, queries = _unit(rng, n, k), _unit(rng, n_queries, k)
            seconds = brute_force_seconds(corpus, queries, top, repeats)
            rows.append({"corpus_size": n, "dims": k, "index_megabytes": corpus.nbytes / 2 ** 20,
                         "search_ms_per_query": 1000 * seconds / n_queries})
    return pd.DataFrame(rows)


def search_cost(hidden_size: int, ratios: Sequence[int] = (1, 2, 4, 8), corpus_sizes: Sequence[int] = (10_000, 100_000),
                n_queries: int = 256, repeats: int = 5, seed: int = 0, recompute: bool = False) -> dict:
    """Stored measurement for one embedding width ``hidden_size`` at each ratio."""
    if not isinstance(hidden_size, int) or hidden_size < 1:
        raise ValueError(f"hidden_size must be a positive integer, got {hidden_size!r}")
    params = {"hidden_size": hidden_size, "ratios": list(ratios), "corpus_sizes": list(corpus_sizes),
              "n_queries": n_queries, "repeats": repeats, "seed": seed, "dtype": "float32",
              "machine": platform.machine()}

    if not recompute:  # a measurement of more ratios answers fewer (a page narrowed to a subset of them)
        covering = load_result(EXPERIMENT, params) or load_covering(EXPERIMENT, params, "ratios", "ratio")
        if covering is not None:
            return covering

    def compute():
        start = time.perf_counter()
        rows = measure([hidden_size // r for r in ratios], corpus_sizes, n_queries, repeats=repeats, seed=seed)
        rows["ratio"] = [hidden_size // k for k in rows["dims"]]
        # timings depend on what else runs: record the machine's load while measuring
        extra = {"load_average_1min": os.getloadavg()[0], "cpu_count": os.cpu_count(),
                 "numpy_threads_env": os.environ.get("OMP_NUM_THREADS"), "torch_threads": torch.get_num_threads()}
        return rows, {"seconds": time.perf_counter() - start}, extra

    return load_or_compute(EXPERIMENT, params, compute, recompute=recompute)
