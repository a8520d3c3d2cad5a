"""The leaderboard's cost axes, read from the stored run records and sweeps (nothing is computed here): the training
wall-clock hours behind each trained row (:func:`training_hours`, :func:`hours_column`), each row's embedding
dimensions (:func:`dimensions`), and the measured hours of one Paper 1 converged run with its scoring
(:func:`paper1_run_hours`), which prices a missing row (:func:`repro.crosspaper.leaderboard.missing_rows`). Each
paper registers the hours of its rows (:attr:`repro.crosspaper.registry.Paper.hours`; Paper 3's:
:func:`repro.crosspaper.leaderboard_paper3.paper3_hours`). The third cost axis, encode tokens per second, is measured by :mod:`repro.crosspaper.encode_rates`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from repro.core.reference import minilm_path
from repro.core.tasks import TASKS
from repro.crosspaper.leaderboard import SUITE, paper1_id, paper2_tokenization
from repro.crosspaper.registry import papers
from repro.embedfilter.sweep import stored_scores
from repro.pooling_attention.converged import converged_scores, run_table


def paper1_run_hours(backbone: str = "smollm2-135m") -> float | None:
    """The mean measured wall hours of one stored Paper 1 converged run on ``backbone`` on this book's machines:
    its steps and dev evaluations (the run record) plus its plain `compact` scoring (the stored scores' seconds);
    None when no run is stored on every task."""
    frame, records = converged_scores(backbone, [1, 2, 3, 4, 5], suite=SUITE)
    runs = run_table(backbone, [1, 2, 3, 4, 5])
    if frame.empty or runs.empty:
        return None
    hours = []
    for (model, seed), _ in frame.groupby(["model", "seed"]):
        run = runs[(runs.model == model) & (runs.seed == seed)]
        scoring = sum(records[(model, seed, task)].get("timings", {}).get("task_seconds", 0.0)
                      for task in TASKS if (model, seed, task) in records)
        if len(run):
            hours.append(float(run["wall hours (run: steps + dev evaluations)"].iloc[0]) + scoring / 3600)
    return float(np.mean(hours)) if hours else None


def hours_column(ids, hours: pd.Series, rows: pd.DataFrame) -> pd.Series:
    """The training-hours column for the rows ``ids``: the stored hours of a trained row, 0 for a training-free
    one (``rows.training_free``), NaN otherwise (the reference, trained elsewhere; a trained row with no record)."""
    free = rows["training_free"].reindex(list(ids)).fillna(False).astype(bool)
    return pd.Series([0.0 if free[key] else hours.get(key, np.nan) for key in ids],
                     index=list(ids), name="training hours", dtype=float)


def training_hours(backbone: str = "smollm2-135m") -> pd.Series:
    """Training wall-clock hours behind each trained method, from the stored run records, by row id: each registered
    paper's (its ``hours``: Paper 1's converged runs, Paper 3's stages and baselines); training-free methods 0."""
    hours: dict[str, float] = {}
    for paper in papers():
        hours.update(paper.training_hours(backbone))
    return pd.Series(hours, name="training hours", dtype=float)


def paper1_hours(backbone: str = "smollm2-135m") -> dict[str, float]:
    """Paper 1's converged runs, by row id: steps and dev evaluations, mean over the seeds whose scores make the
    row (a run whose scoring is incomplete is not in it)."""
    runs = run_table(backbone, [1, 2, 3, 4, 5])
    if runs.empty:
        return {}
    scored, _ = converged_scores(backbone, [1, 2, 3, 4, 5], suite=SUITE)
    pairs = set(zip(scored["model"], scored["seed"])) if len(scored) else set()
    runs = runs[[(m, s) in pairs for m, s in zip(runs["model"], runs["seed"])]]
    return {paper1_id(model): float(part["wall hours (run: steps + dev evaluations)"].mean())
            for model, part in (runs.groupby("model") if len(runs) else [])}


def dimensions(scores: pd.DataFrame, backbone: str = "smollm2-135m") -> pd.Series:
    """Each method's embedding dimensions, by row id: EmbedFilter's stored ``dims`` (edge/2 keeps half of the
    backbone's width), the backbone's width for every other decoder method (Paper 1's heads and Paper 3's encoders
    pool to it), and all-MiniLM-L6-v2's from its packaged config."""
    sweep = stored_scores(SUITE, tokenization=paper2_tokenization())
    dims: dict[str, float] = {}
    if not sweep.empty and "dims" in sweep:
        sweep = sweep[sweep.backbone == backbone]
        for (prompt, variant), part in sweep.groupby(["prompt", "variant"]):
            if prompt in ("prompteol", "echo") and variant in ("raw", "edge/2"):
                dims[prompt + ("" if variant == "raw" else "+edge/2")] = float(part["dims"].iloc[0])
    width = dims.get("prompteol", dims.get("echo"))
    for method in scores["method"].unique():
        if method == "minilm":
            dims[method] = float(json.loads((minilm_path() / "config.json").read_text())["hidden_size"])
        elif method not in dims and width is not None:
            dims[method] = width
    return pd.Series(dims, name="dimensions")
