"""Scores of a trained AutoRegEmbed encoder (either stage) on a suite, through the one mteb adapter; stored
per task in ``results/autoreg_scores/``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from repro.autoregembed.config import NEXT_INSTRUCTION, PASSAGE_PROMPT, AlignConfig, CompressConfig, stage_of
from repro.autoregembed.model import AutoRegEmbedder
from repro.autoregembed.train import load_encoder, run_spec
from repro.core.scoring import evaluate_per_task
from repro.core.tasks import STS_TASKS
from repro.store.fingerprint import weights_digest
from repro.store.identity import config_identity
from repro.store.runs import train_or_load

SCORES_EXPERIMENT = "autoreg_scores"
RETRIEVAL_TASKS = ["SciFact", "NFCorpusPreprocessed"]  # the retrieval pair (MS MARCO is not offline)
def autoreg_embedder(config: CompressConfig | AlignConfig, max_length: int = 512, progress: bool = True
                     ) -> AutoRegEmbedder:
    """The trained encoder of ``config`` (trained, resumed or loaded by the run store; stage 1 first if needed)
    as an Embedder."""
    model, _ = train_or_load(run_spec(config, progress))
    return embedder_of(model, config, max_length)


def autoreg_embedder_from(folder: str | Path, max_length: int = 512) -> AutoRegEmbedder:
    """The encoder saved in a run's ``final`` folder (:func:`repro.autoregembed.train.load_encoder`) as an
    Embedder, with the inference settings of its config."""
    model, config = load_encoder(folder)
    return embedder_of(model, config, max_length)


def embedder_of(model, config: CompressConfig | AlignConfig, max_length: int) -> AutoRegEmbedder:
    return AutoRegEmbedder(model, max_length, config.target_max_length,
                           getattr(config, "instruction", NEXT_INSTRUCTION), label=f"autoregembed-{stage_of(config)}",
                           digest=weights_digest(model), newline=getattr(config, "inference_newline", True),
                           passage_prompt=getattr(config, "passage_prompt", PASSAGE_PROMPT))


def evaluate_autoreg(config: CompressConfig | AlignConfig, suite: str = "compact",
                     tasks: Sequence[str] | None = None, eval_max_length: int = 512, progress: bool = True,
                     recompute: bool = False) -> pd.DataFrame:
    """Scores of the trained encoder per task (stored per task; trains or loads only if a task is missing)."""
    tasks = list(tasks) if tasks is not None else STS_TASKS + RETRIEVAL_TASKS
    stage = stage_of(config)

    def make_embedder():
        embedder = autoreg_embedder(config, eval_max_length, progress)
        return embedder, embedder.digest

    identity = {"stage": stage, "config": config_identity(config), "eval_max_length": eval_max_length}
    frame = evaluate_per_task(SCORES_EXPERIMENT, identity, suite, tasks, make_embedder, progress, recompute,
                              label=f"AutoRegEmbed {stage}")
    return frame.assign(stage=stage)
