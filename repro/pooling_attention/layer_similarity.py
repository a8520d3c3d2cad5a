"""How similar are the representations of two layers? (Tang & Yang, Figure 1)

Two measures over the same n sentences, each a layer x layer matrix:

* **linear CKA** (Kornblith et al. 2019): for centred states X (n x d) and Y (n x d'),
  CKA = ||Yᵀ X||_F² / (||Xᵀ X||_F · ||Yᵀ Y||_F). Invariant to rotations and isotropic scaling, not
  to per-dimension scaling, so a few massive-activation dimensions can dominate it.
* **RSA** (representational similarity): the Pearson correlation between the two layers'
  sentence-by-sentence cosine-similarity matrices (upper triangles). It asks "do the two layers rank
  sentence pairs alike?", which is what an embedding is used for.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from repro.core.backbones import STORED_DTYPE, load_backbone, revision_of
from repro.core.encode import EncodeConfig, encode
from repro.core.samples import sentence_sample
from repro.store.results import load_or_compute


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x = x - x.mean(0)
    y = y - y.mean(0)
    cross = np.linalg.norm(y.T @ x) ** 2
    denom = np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y)
    return float(cross / denom) if denom > 0 else float("nan")


def _cosine_upper(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    sims = x @ x.T
    return sims[np.triu_indices(len(x), k=1)]


def rsa(x: np.ndarray, y: np.ndarray) -> float:
    a, b = _cosine_upper(x), _cosine_upper(y)
    if a.std() < 1e-9 or b.std() < 1e-9:
        return float("nan")  # a constant representation (e.g. the same EOS token state for every text)
    return float(np.corrcoef(a, b)[0, 1])


MEASURES = {"linear_cka": linear_cka, "rsa": rsa}


def layer_similarity(states: np.ndarray, measure: str = "linear_cka") -> np.ndarray:
    """``states`` [layers, n, d] -> symmetric [layers, layers] matrix of the measure."""
    if measure not in MEASURES:
        raise ValueError(f"unknown measure '{measure}'; valid: {', '.join(MEASURES)}")
    fn = MEASURES[measure]
    n_layers = states.shape[0]
    out = np.eye(n_layers)
    for i in range(n_layers):
        for j in range(i + 1, n_layers):
            out[i, j] = out[j, i] = fn(states[i], states[j])
        if np.isnan(fn(states[i], states[i])):
            out[i, i] = np.nan
    return out


def layer_correlation(backbone_name: str, n_sentences: int = 1000, pooling: str = "last", seed: int = 0,
                      recompute: bool = False) -> dict:
    """Both measures between every pair of layers of one backbone's EOS (last-token) states; stored."""

    params = {"backbone": backbone_name, "revision": revision_of(backbone_name), "n_sentences": n_sentences,
              "pooling": pooling, "prompt": "none", "seed": seed, "sentences": "STSBenchmark test"}

    def compute():
        start = time.perf_counter()
        backbone = load_backbone(backbone_name, dtype=STORED_DTYPE)
        texts = sentence_sample(n_sentences, seed)
        states = encode(backbone, texts, EncodeConfig(prompt="none", poolings=(pooling,)), progress=False)[pooling]
        encoded = time.perf_counter() - start
        rows = []
        for measure in MEASURES:
            matrix = layer_similarity(states, measure)
            for i in range(matrix.shape[0]):
                for j in range(matrix.shape[1]):
                    rows.append({"measure": measure, "layer_i": i, "layer_j": j, "value": matrix[i, j]})
        return pd.DataFrame(rows), {"encode_seconds": encoded, "total_seconds": time.perf_counter() - start,
                                    "texts": len(texts)}, {}

    return load_or_compute("p1_layer_correlation", params, compute, recompute=recompute)
