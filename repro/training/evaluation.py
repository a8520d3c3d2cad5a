"""Train-or-load a contrastive model (a Paper 1 design or a contrastive baseline) and score it per task.

Its training record is in ``results/trained_runs/`` (:func:`repro.training.contrastive.run_spec`), its scores
in ``results/trained_scores/``, keyed by the full training config, the evaluation length, the suite and the
task (STS keeps per-pair similarities).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from repro.core.embedder import Embedder
from repro.core.scoring import evaluate_per_task
from repro.store.fingerprint import params_hash, weights_digest
from repro.store.results import all_results
from repro.store.runs import ensure_trained, train_or_load
from repro.training.budget import budget_points, evaluations
from repro.training.contrastive import RUNS_EXPERIMENT, TrainConfig, TrainedEmbedder, load_trained, run_spec
from repro.training.loop import load_snapshot

SCORES_EXPERIMENT = "trained_scores"


def trained_embedder(config: TrainConfig, max_length: int | None = None, progress: bool = True,
                     refresh_record: bool = False) -> TrainedEmbedder:
    """The trained model of ``config`` (trained, resumed or loaded by the run store) as an Embedder."""
    model, _ = train_or_load(run_spec(config, progress), refresh_record=refresh_record)
    return TrainedEmbedder(model, config, max_length, digest=weights_digest(model))


def instructions_key(instructions: tuple[str, dict[str, str]]) -> str:
    """The result key of an instruction variant: its name and a hash of its {task: instruction} table."""
    return f"{instructions[0]}-{params_hash(instructions[1])}"


def score_identity(config: TrainConfig, eval_max_length: int = 512, **extra) -> dict:
    """The result key (without suite and task) of a trained contrastive model's scores: its training identity
    and the evaluation's max length, plus ``extra`` (``instructions``, ``budget_step``). The one definition every
    writer and reader of those scores uses."""
    return {"train": config.identity(), "eval_max_length": eval_max_length, **extra}


def evaluate_trained(config: TrainConfig, suite: str, tasks: Sequence[str] | None = None, eval_max_length: int = 512,
                     progress: bool = True, recompute: bool = False, recompute_stale: bool = False,
                     instructions: tuple[str, dict[str, str]] | None = None) -> pd.DataFrame:
    """Scores of the trained model per task (stored per task; trains/loads the model only if needed).
    ``recompute_stale``: recompute the tasks whose stored scores come from other weights than the model at hand
    (weights lost and retrained: CPU training is not bit-reproducible across machines). ``instructions``:
    (name, {task: instruction}) glued before every query-side text (a separate result key: the name and a
    hash of the table); column ``instructions`` (the name, or "none")."""

    def make_embedder():
        embedder = trained_embedder(config, eval_max_length, progress, refresh_record=recompute_stale)
        return embedder, embedder.digest

    identity = score_identity(config, eval_max_length,
                              **({} if instructions is None else {"instructions": instructions_key(instructions)}))
    frame = evaluate_per_task(SCORES_EXPERIMENT, identity, suite, tasks, make_embedder, progress, recompute,
                              label=f"model {config.model}", recompute_stale=recompute_stale,
                              instructions=None if instructions is None else instructions[1])
    return frame.assign(model=config.model, instructions="none" if instructions is None else instructions[0])


def score_budget_points(folder: Path, experiment: str, identity: dict, suite: str, tasks: Sequence[str] | None,
                        embedder_at: Callable[[int], tuple[Embedder, str]], progress: bool = True,
                        label: str = "") -> pd.DataFrame:
    """Scores of a run under the budget rule at its budget points (:func:`repro.training.budget.budget_points`:
    the doubling grid of evaluated steps and the dev-selected step), from the weights snapshots in its run
    ``folder``: ``embedder_at(step) -> (Embedder, weights digest)`` builds the model at a step. Stored per task
    under ``identity`` + ``budget_step``; column ``budget_step``. Any trainer that logs through
    :func:`repro.training.loop.run_training` keeps these snapshots."""
    summary = json.loads((Path(folder) / "summary.json").read_text())
    if "selected_step" not in summary:
        raise ValueError(f"{folder} is not a run under the budget rule (no dev-selected step): no budget points")
    steps = budget_points(summary["selected_step"], [s for s, _ in evaluations(summary["history"])])
    frames = []
    for step in steps:
        frame = evaluate_per_task(experiment, {**identity, "budget_step": step}, suite, tasks,
                                  lambda step=step: embedder_at(step), progress, label=f"{label} @ step {step}")
        frames.append(frame.assign(budget_step=step))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def evaluate_budget_points(config: TrainConfig, suite: str = "small", tasks: Sequence[str] | None = None,
                           eval_max_length: int = 512, progress: bool = True) -> pd.DataFrame:
    """Scores at log-spaced training budgets of a contrastive run under the budget rule
    (:func:`score_budget_points`), stored under the run's identity + ``budget_step``. The snapshots live in the run
    folder (not committed): score a run's budget points in the session that trains it."""
    if config.stopping != "dev":
        raise ValueError("budget points need a run under the budget rule (stopping='dev')")
    folder, _ = ensure_trained(run_spec(config, progress))

    def embedder_at(step: int):
        model, _ = load_trained(folder / "final")
        load_snapshot(folder, model, step)
        digest = weights_digest(model)
        return TrainedEmbedder(model, config, eval_max_length, digest=digest), digest

    identity = score_identity(config, eval_max_length)
    frame = score_budget_points(folder, SCORES_EXPERIMENT, identity, suite, tasks, embedder_at, progress,
                                label=f"model {config.model}")
    return frame.assign(model=config.model) if len(frame) else frame


def stored_runs(backbone: str) -> list[dict]:
    """Every stored training record of contrastive models on ``backbone``."""
    return all_results(RUNS_EXPERIMENT, where=lambda p: p["train"]["backbone"] == backbone)
