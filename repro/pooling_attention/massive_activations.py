"""Massive activations: why mean-pooled intermediate layers can score far below their neighbours.

Intermediate layers of these LLMs carry a few dimensions whose magnitude is orders above the rest (often
tied to the first token). Averaged over tokens they dominate every mean-pooled state, so all sentences
look alike under cosine similarity. This module measures it per layer (the largest dimension's mean
absolute value over the median dimension's) and shows what standardizing the dimensions does to STS-B:
every dimension z-scored with statistics of a fixed SNLI sample (the same protocol as the whitening
baseline), or the massive dimensions (mean |value| over 20x the median dimension's, on that sample)
zeroed: labelled extras beside the paper's protocol. Stored in ``results/p1_massive_activations``.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from repro.core.backbones import STORED_DTYPE, load_backbone
from repro.core.encode import EncodeConfig, encode
from repro.core.evaluate import evaluate_encoders, states_encoder
from repro.core.samples import nli_sentences
from repro.core.suites import describe_suite
from repro.core.tasks import data_fingerprint, suite_task
from repro.store.results import load_or_compute

EXPERIMENT = "p1_massive_activations"


class Standardize:
    """``x -> (x - mean) / std`` per dimension, statistics fitted on reference states."""

    def __init__(self, reference: np.ndarray):
        self.mean = reference.mean(0)
        self.std = reference.std(0) + 1e-6

    def __call__(self, states: np.ndarray) -> np.ndarray:
        return (states - self.mean) / self.std


class DropDimensions:
    """Zero the dimensions whose mean |value| on the reference states exceeds ``factor`` x the median."""

    def __init__(self, reference: np.ndarray, factor: float = 20.0):
        magnitude = np.abs(reference).mean(0)
        self.keep = (magnitude <= factor * np.median(magnitude)).astype(np.float32)
        self.dropped = int((self.keep == 0).sum())

    def __call__(self, states: np.ndarray) -> np.ndarray:
        return states * self.keep


def dimension_dominance(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per layer of ``[L, n, d]`` states: (largest / median mean-|value| ratio, index of the largest dim)."""
    magnitude = np.abs(states).mean(1)  # [L, d]
    return magnitude.max(1) / np.median(magnitude, axis=1), magnitude.argmax(1)


def massive_activations(backbone_name: str, suite: str = "standard", task: str = "STSBenchmark",
                        n_reference: int = 2000, seed: int = 0, recompute: bool = False) -> dict:

    params = {"backbone": backbone_name, "suite": suite, "caps": describe_suite(suite), "task": task,
              "prompt": "none", "pooling": "mean", "n_reference": n_reference, "seed": seed,
              "reference": "SNLI triplet sentences (seeded sample)", "data": data_fingerprint(task)}

    def compute():
        start = time.perf_counter()
        backbone = load_backbone(backbone_name, dtype=STORED_DTYPE)
        config = EncodeConfig(prompt="none")  # the Figure 2 setting: every layer, last and mean pooled
        reference = encode(backbone, nli_sentences(n_reference, seed), config, progress=False)["mean"]
        ratio, top_dim = dimension_dominance(reference)
        layers = list(range(backbone.num_layers + 1))
        encoders = []
        for layer in layers:
            variants = (("raw", None), ("standardized", Standardize(reference[layer])),
                        ("massive dims zeroed", DropDimensions(reference[layer])))
            for variant, transform in variants:
                encoders.append(({"layer": layer, "variant": variant},
                                 states_encoder(backbone, config, "mean", layer, transform=transform)))
        rows = evaluate_encoders([suite_task(task, suite)], encoders, progress=False)
        dropped = [DropDimensions(reference[layer]).dropped for layer in layers]
        rows = rows.merge(pd.DataFrame({"layer": layers, "max_over_median_magnitude": ratio,
                                        "largest_dimension": top_dim, "dims_zeroed": dropped}), on="layer")
        return rows, {"seconds": time.perf_counter() - start}, {}

    return load_or_compute(EXPERIMENT, params, compute, recompute=recompute)
