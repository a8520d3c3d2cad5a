"""Scores of a trained AutoRegEmbed encoder (either stage) on a suite, through the one mteb adapter; stored
per task in ``results/autoreg_scores/``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from repro.autoregembed.config import AlignConfig, CompressConfig, inference_settings, stage_of
from repro.autoregembed.model import AutoRegEmbedder
from repro.autoregembed.train import load_encoder, run_spec
from repro.core.scoring import evaluate_per_task
from repro.core.tasks import STS_TASKS
from repro.store.fingerprint import weights_digest
from repro.store.identity import config_identity
from repro.store.runs import ensure_trained, train_or_load
from repro.training.evaluation import score_budget_points
from repro.training.loop import load_snapshot

SCORES_EXPERIMENT = "autoreg_scores"
RETRIEVAL_TASKS = ["SciFact", "NFCorpusPreprocessed"]  # the book's retrieval pair (MS MARCO is not offline)


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
    """The inference of a stage's ``config``: stage 2's own settings, stage 1's those of its template."""
    settings = inference_settings(config)
    return AutoRegEmbedder(model, max_length, config.target_max_length, settings["instruction"],
                           label=f"autoregembed-{stage_of(config)}", digest=weights_digest(model),
                           newline=settings["inference_newline"], passage_prompt=settings["passage_prompt"],
                           template=config.template, bos=config.bos)


def evaluate_autoreg(config: CompressConfig | AlignConfig, suite: str = "compact",
                     tasks: Sequence[str] | None = None, eval_max_length: int = 512, progress: bool = True,
                     recompute: bool = False) -> pd.DataFrame:
    """Scores of the trained encoder per task (stored per task; trains or loads only if a task is missing)."""
    tasks = list(tasks) if tasks is not None else STS_TASKS + RETRIEVAL_TASKS
    stage = stage_of(config)

    def make_embedder():
        embedder = autoreg_embedder(config, eval_max_length, progress)
        return embedder, embedder.digest

    frame = evaluate_per_task(SCORES_EXPERIMENT, score_identity(config, eval_max_length), suite, tasks,
                              make_embedder, progress, recompute, label=f"AutoRegEmbed {stage}")
    return frame.assign(stage=stage)


def score_identity(config: CompressConfig | AlignConfig, eval_max_length: int = 512) -> dict:
    """The key of a trained encoder's stored scores (without suite and task)."""
    return {"stage": stage_of(config), "config": config_identity(config), "eval_max_length": eval_max_length}


def evaluate_autoreg_budget_points(config: AlignConfig, suite: str = "small", tasks: Sequence[str] | None = None,
                                   eval_max_length: int = 512, progress: bool = True) -> pd.DataFrame:
    """Scores of a stage-2 run under the budget rule at its budget points (the doubling grid of evaluated steps and
    the dev-selected step, from the run's weights snapshots: one constant-learning-rate run), stored under the
    run's score identity + ``budget_step``. The snapshots live in the run folder (not committed): score them in
    the session that trains the run."""
    if not isinstance(config, AlignConfig) or config.stopping != "dev":
        raise ValueError("budget points need a stage-2 run under the budget rule (AlignConfig, stopping='dev')")
    folder, _ = ensure_trained(run_spec(config, progress))
    tasks = list(tasks) if tasks is not None else STS_TASKS + RETRIEVAL_TASKS

    def embedder_at(step: int):
        model, saved = load_encoder(folder / "final")
        load_snapshot(folder, model, step)
        embedder = embedder_of(model, saved, eval_max_length)
        return embedder, embedder.digest

    frame = score_budget_points(folder, SCORES_EXPERIMENT, score_identity(config, eval_max_length), suite, tasks,
                                embedder_at, progress, label=f"AutoRegEmbed {stage_of(config)}")
    return frame.assign(stage=stage_of(config)) if len(frame) else frame
