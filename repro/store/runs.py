"""The run store: one ``train_or_load`` for every trained model of the book.

A :class:`RunSpec` says how to train one run and how to load it back: the Paper 1 designs and the contrastive
baselines (:func:`repro.training.contrastive.run_spec`) and AutoRegEmbed's stages 1 and 2
(:func:`repro.autoregembed.train.run_spec`). The store gives each run a folder ``runs/<name>-<hash>``
(``REPRO_RUNS_DIR``; weights and checkpoints, not committed: rebuilt by the same command), trains, resumes or
loads it under one inter-process lock, and keeps its training record (summary + history) in the result store
under ``spec.experiment`` / ``spec.params``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from repro.store.fingerprint import params_hash
from repro.store.lanes import exclusive
from repro.store.paths import REPO_ROOT
from repro.store.results import load_or_compute

RUNS_ENV = "REPRO_RUNS_DIR"
TRAINING_ENV = "REPRO_TRAINING"  # "allow" (default) or "refuse": the 'repro' Jupyter kernel refuses training


class TrainingRefused(RuntimeError):
    """A run would train here, and ``REPRO_TRAINING=refuse`` (the book's Jupyter kernel) forbids it."""


def _train(spec: RunSpec, folder: Path) -> None:
    mode = os.environ.get(TRAINING_ENV, "allow").strip() or "allow"
    if mode not in ("allow", "refuse"):
        raise ValueError(f"{TRAINING_ENV}={mode!r}; valid: allow, refuse")
    if mode == "refuse":
        raise TrainingRefused(
            f"run {spec.name} is not trained on this machine, and {TRAINING_ENV}=refuse (the 'repro' Jupyter kernel "
            f"sets it, so that running a page never starts a long training): train it from a terminal (the page's "
            f"command in the README), or set {TRAINING_ENV}=allow in this kernel (os.environ) to train it here")
    spec.train(folder)


def runs_dir() -> Path:
    """Trained runs' folders (default ``runs/`` in the repository; move with ``REPRO_RUNS_DIR``)."""
    folder = Path(os.environ.get(RUNS_ENV, REPO_ROOT / "runs")).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def run_folder_name(backbone: str, kind: str, identity: dict) -> str:
    """``<backbone>-<kind>-<12 hex digits of the identity>`` (an HF id or folder contributes its last part):
    the one way run folders are named."""
    short = Path(backbone).name if "/" in backbone else backbone
    return f"{short}-{kind}-{params_hash(identity)}"


@dataclass(frozen=True)
class RunSpec:
    """One trainable run: ``train(folder)`` writes ``folder/summary.json`` and ``folder/final/<weights_file>``;
    ``load(folder / "final") -> (model, config)`` rebuilds the model, whose config must equal ``config``."""

    name: str  # the run folder's name (run_folder_name)
    experiment: str  # where its training record is stored
    params: dict  # the record's key
    config: object
    train: Callable[[Path], object]
    load: Callable[[Path], tuple]
    weights_file: str

    @property
    def folder(self) -> Path:
        return runs_dir() / self.name

    @property
    def weights_here(self) -> bool:
        """Whether this machine holds the run's trained weights (``folder/final/<weights_file>``)."""
        return (self.folder / "final" / self.weights_file).is_file()


def ensure_trained(spec: RunSpec, refresh_record: bool = False) -> tuple[Path, dict]:
    """Train the run once and store its record; returns its folder and the record, without loading it.

    Trains (or resumes) it unless ``summary.json`` exists, and again if the record is stored but this machine
    lacks ``final/<weights_file>`` (same data, same seed). Holds the lock ``run <folder>`` (another lane that
    wants this run waits, then loads it); the lock covers the re-checks of record and weights, not only the
    training. ``refresh_record`` re-stores the record from the local run folder (curves and scores then
    describe the same training)."""
    folder = spec.folder

    def compute():
        if not (folder / "summary.json").is_file():
            _train(spec, folder)
        summary = json.loads((folder / "summary.json").read_text())
        history = pd.DataFrame(summary.pop("history"))
        return history, {"train_seconds": summary["train_seconds"]}, {"summary": summary}

    with exclusive(f"run {folder}"):
        record = load_or_compute(spec.experiment, spec.params, compute, recompute=refresh_record)
        if not spec.weights_here:
            _train(spec, folder)  # record stored, weights missing on this machine: retrain
    return folder, record


def train_or_load(spec: RunSpec, refresh_record: bool = False) -> tuple[object, dict]:
    """The trained model of ``spec`` (trained, resumed or loaded) and its stored training record."""
    folder, record = ensure_trained(spec, refresh_record)
    model, loaded = spec.load(folder / "final")
    if loaded != spec.config:
        raise ValueError(f"{folder} holds a model trained with another configuration")
    return model, record
