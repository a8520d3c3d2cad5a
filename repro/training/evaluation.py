"""Train-or-load a contrastive model (a Paper 1 design or a contrastive baseline) and score it per task.

Its training record is in ``results/trained_runs/`` (:func:`repro.training.contrastive.run_spec`), its scores
in ``results/trained_scores/``, keyed by the full training config, the evaluation length, the suite and the
task (STS keeps per-pair similarities).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from repro.core.scoring import evaluate_per_task
from repro.store.fingerprint import weights_digest
from repro.store.results import all_results
from repro.store.runs import train_or_load
from repro.training.contrastive import RUNS_EXPERIMENT, TrainConfig, TrainedEmbedder, run_spec

SCORES_EXPERIMENT = "trained_scores"


def trained_embedder(config: TrainConfig, max_length: int | None = None, progress: bool = True,
                     refresh_record: bool = False) -> TrainedEmbedder:
    """The trained model of ``config`` (trained, resumed or loaded by the run store) as an Embedder."""
    model, _ = train_or_load(run_spec(config, progress), refresh_record=refresh_record)
    return TrainedEmbedder(model, config, max_length, digest=weights_digest(model))


def evaluate_trained(config: TrainConfig, suite: str, tasks: Sequence[str] | None = None, eval_max_length: int = 512,
                     progress: bool = True, recompute: bool = False, recompute_stale: bool = False) -> pd.DataFrame:
    """Scores of the trained model per task (stored per task; trains/loads the model only if needed).
    ``recompute_stale``: recompute the tasks whose stored scores come from other weights than the model at hand
    (weights lost and retrained: CPU training is not bit-reproducible across machines)."""

    def make_embedder():
        embedder = trained_embedder(config, eval_max_length, progress, refresh_record=recompute_stale)
        return embedder, embedder.digest

    frame = evaluate_per_task(SCORES_EXPERIMENT, {"train": config.identity(), "eval_max_length": eval_max_length},
                              suite, tasks, make_embedder, progress, recompute, label=f"model {config.model}",
                              recompute_stale=recompute_stale)
    return frame.assign(model=config.model)


def stored_runs(backbone: str) -> list[dict]:
    """Every stored training record of contrastive models on ``backbone``."""
    return [r for r in all_results(RUNS_EXPERIMENT) if r["params"]["train"]["backbone"] == backbone]
