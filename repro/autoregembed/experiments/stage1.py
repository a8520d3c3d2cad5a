"""Stage-1 diagnostics: the held-out reconstruction loss of an uninformative memory (the reference line of
stage 1's curve) and a profile of the data stage 1 trains on."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd

from repro.autoregembed.config import CompressConfig
from repro.autoregembed.data import read_stage1
from repro.autoregembed.model import TextIds, build_autoreg
from repro.autoregembed.objectives import seen_indices
from repro.autoregembed.train import validation_reconstruction
from repro.core.backbones import load_backbone, revision_of
from repro.core.derived import stored_statistic
from repro.store.identity import config_identity
from repro.store.results import load_or_compute

UNINFORMATIVE_EXPERIMENT = "autoreg_uninformative"


def uninformative_reconstruction(compress: CompressConfig, recompute: bool = False) -> float:
    """Stage 1's reference line: the held-out reconstruction loss (the same ``validation_examples`` rows the
    run validates on) of the frozen decoder given an uninformative memory, the untrained model's compression
    tokens for every text (:func:`repro.autoregembed.train.validation_reconstruction`); stored."""

    identity = config_identity(compress)  # (a setting added later is in the key only when not at its default)
    params = {name: identity[name] for name in ("backbone", "compression_tokens", "max_length", "target_max_length",
                                                "validation_examples", "data", "template", "cut", "bos")
              if name in identity}
    # the untrained tokens do not depend on the seed, the lr or the steps: those are not in the key

    def compute():
        model = build_autoreg(compress)
        texts = TextIds.of(model.backbone.tokenizer, compress)
        loss = validation_reconstruction(model, texts, read_stage1(compress.data)[:compress.validation_examples],
                                         informative=False)
        return pd.DataFrame([{"validation_loss": loss}]), {}, {}

    return float(load_or_compute(UNINFORMATIVE_EXPERIMENT, params, compute, recompute)["rows"][0]["validation_loss"])


def stage1_data_profile(compress: CompressConfig) -> pd.Series:
    """What stage 1 trains on: over the instruction examples its steps draw, the target length in tokens
    (what the frozen decoder must regenerate from the k compression states) and the share of inputs cut at
    ``max_length``. Short targets ask little of the memory: a one-word answer can be reconstructed from a
    memory that carries little of the text."""

    rows = read_stage1(compress.data)[compress.validation_examples:]
    seen = [rows[i] for i in seen_indices(len(rows), compress)]
    # stored like any derived statistic (it would load the backbone and tokenize every drawn example on every
    # build), keyed by the exact examples drawn, the tokenizer's backbone revision and the two limits
    drawn = hashlib.sha256(json.dumps(seen, sort_keys=True).encode()).hexdigest()[:16]
    params = {"backbone": compress.backbone, "revision": revision_of(compress.backbone), "examples": drawn,
              "max_length": compress.max_length, "target_max_length": compress.target_max_length}

    def compute() -> list[dict]:
        tok = load_backbone(compress.backbone).tokenizer
        target = np.array([len(tok(r["output"], add_special_tokens=False).input_ids) for r in seen])
        source = np.array([len(tok(r["context"] + "\n" + r["instruction"], add_special_tokens=False).input_ids)
                           for r in seen])
        return [{"examples drawn": len(seen), "target tokens (median)": float(np.median(target)),
                 "targets of <= 3 tokens": float((target <= 3).mean()),
                 "targets cut (longer than the target limit)":
                     float((target > compress.target_max_length - 1).mean()),
                 "input tokens (median)": float(np.median(source)),
                 "inputs cut (longer than the input limit)": float((source > compress.max_length).mean())}]

    return stored_statistic("stage-1 data profile", params, compute).iloc[0]
