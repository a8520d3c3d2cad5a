"""The leaderboard's cost axes, read from the stored run records and sweeps (nothing is computed here): the training
wall-clock hours behind each trained row (:func:`training_hours`, :func:`hours_column`), each row's embedding
dimensions (:func:`dimensions`), and the measured hours of one Paper 1 converged run with its scoring
(:func:`paper1_run_hours`), which prices a missing row (:func:`repro.crosspaper.leaderboard.missing_rows`). The third
cost axis, encode tokens per second, is measured by :mod:`repro.crosspaper.encode_rates`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from repro.autoregembed.experiments import converged as p3_converged
from repro.autoregembed.experiments.baselines import CONTRASTIVE, contrastive_config
from repro.autoregembed.train import RUNS_EXPERIMENT as AUTOREG_RUNS
from repro.autoregembed.train import run_params as ar_run_params
from repro.core.reference import minilm_path
from repro.core.tasks import TASKS
from repro.crosspaper.leaderboard import (
    BUDGET_IDS,
    SUITE,
    baseline_id,
    paper1_id,
    paper2_tokenization,
    paper3_budget_frame,
    paper3_configs,
)
from repro.embedfilter.sweep import stored_scores
from repro.pooling_attention.converged import converged_scores, run_table
from repro.store.results import load_result
from repro.training.contrastive import RUNS_EXPERIMENT as TRAINED_RUNS


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
    """Training wall-clock hours behind each trained method, from the stored run records: Paper 1's converged
    runs (steps and dev evaluations, mean over the seeds whose scores make the row), Paper 3's stages (stage 1
    counted in both compression only and AutoRegEmbed) and baselines; training-free methods 0."""
    hours: dict[str, float] = {}
    runs = run_table(backbone, [1, 2, 3, 4, 5])
    scored, _ = converged_scores(backbone, [1, 2, 3, 4, 5], suite=SUITE)
    if len(runs):  # only the seeds behind the row (a run whose scoring is incomplete is not in it)
        pairs = set(zip(scored["model"], scored["seed"])) if len(scored) else set()
        runs = runs[[(m, s) in pairs for m, s in zip(runs["model"], runs["seed"])]]
    for model, part in (runs.groupby("model") if len(runs) else []):
        hours[paper1_id(model)] = float(part["wall hours (run: steps + dev evaluations)"].mean())
    hours.update(paper3_budget_hours(backbone))
    compress, align = paper3_configs(backbone)
    stage1 = load_result(AUTOREG_RUNS, ar_run_params(compress))
    stage2 = load_result(AUTOREG_RUNS, ar_run_params(align))
    if stage1 is not None:
        hours["p3-compress"] = stage1["summary"]["train_seconds"] / 3600
        if stage2 is not None:
            hours["p3-align"] = (stage1["summary"]["train_seconds"]
                                            + stage2["summary"]["train_seconds"]) / 3600
    for name in CONTRASTIVE:
        record = load_result(TRAINED_RUNS, {"train": contrastive_config(name, align).identity()})
        if record is not None:
            hours[baseline_id(name)] = record["summary"]["train_seconds"] / 3600
    return pd.Series(hours, name="training hours")


def paper3_budget_hours(backbone: str) -> dict[str, float]:
    """Wall-clock hours of Paper 3's budget-rule runs (steps and dev evaluations, mean over seeds; stage 1 counted
    in both compression only and AutoRegEmbed)."""
    base = p3_converged.base_config(backbone)
    runs = p3_converged.run_table(base)
    frame, rows = paper3_budget_frame(backbone)
    if runs.empty or frame.empty:
        return {}
    runs = runs[[(m, s) in set(zip(frame["model"], frame["seed"])) for m, s in zip(runs["method"], runs["seed"])]]
    stage1 = p3_converged.compression_config(base)
    record = None if stage1 is None else load_result(AUTOREG_RUNS, ar_run_params(stage1))
    first = 0.0 if record is None else (record["summary"]["train_seconds"]  # steps + evaluations, as the runs'
                                        + record["summary"].get("eval_seconds", 0.0)) / 3600
    hours = ({BUDGET_IDS[p3_converged.COMPRESSION]: first} if record is not None and p3_converged.AUTOREG in rows
             else {})
    for method, part in runs.groupby("method"):  # the runs behind the row's scores
        hours[BUDGET_IDS[method]] = (float(part["wall hours (run: steps + dev evaluations)"].mean())
                                 + (first if method == p3_converged.AUTOREG else 0.0))
    return hours


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
