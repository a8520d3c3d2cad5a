"""Training curves of AutoRegEmbed's stored runs: stage 1's reconstruction loss, stage 2's alignment loss and
STS-B dev, beside the contrastive baselines'."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from repro.autoregembed.config import stage_of
from repro.autoregembed.train import RUNS_EXPERIMENT, run_params
from repro.store.results import load_result
from repro.training.curves import with_rolling_loss


def autoreg_training_curves(runs: dict, rolling: int = 10) -> pd.DataFrame:
    """One row per logged step of each stored AutoRegEmbed run in ``runs`` (label -> CompressConfig or
    AlignConfig; columns ``run``, ``stage``, ``step``, ``train_loss``, ``validation_loss`` (stage 1: held-out
    reconstruction cross-entropy), ``validation_sts`` (stage 2: STS-B dev Spearman x100) and the loss's rolling
    mean); runs not stored yet are left out."""
    frames = []
    for label, config in runs.items():
        record = load_result(RUNS_EXPERIMENT, run_params(config))
        if record is not None:
            frames.append(pd.DataFrame(record["rows"]).assign(run=label, stage=stage_of(config)))
    if not frames:
        raise ValueError("none of these AutoRegEmbed runs is stored yet: train them first "
                         "(python -m repro.autoregembed.experiments ...)")
    curves = pd.concat(frames, ignore_index=True)
    for column in ("validation_loss", "validation_sts"):
        if column not in curves:
            curves[column] = float("nan")
    return with_rolling_loss(curves, ["run"], rolling)


def plot_autoreg_training_curves(curves: pd.DataFrame, contrastive: pd.DataFrame | None = None,
                                 uninformative: float | None = None):
    """Stage 1's reconstruction loss (training, rolling mean; held-out, markers; ``uninformative``: the held-out
    loss of a memory that carries no information, a horizontal line), stage 2's alignment loss, and the STS-B
    dev Spearman of stage 2 (and of the contrastive baselines in ``contrastive``, a :func:`training_curves`
    frame, for the same steps)."""
    loss = next(c for c in curves.columns if c.startswith("train loss (rolling"))
    fig, axes = plt.subplots(3, 1, figsize=(8, 11))  # one above the other: the column's width
    stage1, stage2 = curves[curves.stage == "compress"], curves[curves.stage == "align"]
    if len(stage1):
        sns.lineplot(data=stage1.dropna(subset=[loss]), x="step", y=loss, hue="run", ax=axes[0])
        sns.lineplot(data=stage1.dropna(subset=["validation_loss"]), x="step", y="validation_loss", hue="run",
                     marker="o", linestyle="--", legend=False, ax=axes[0])
    if uninformative is not None:
        axes[0].axhline(uninformative, color="grey", linestyle=":", label="uninformative memory (held-out)")
        axes[0].legend(fontsize=9)
    axes[0].set(title="stage 1: reconstruction (line: training, dashed: held-out)", ylabel="cross-entropy (nats/token)")
    if len(stage2):
        sns.lineplot(data=stage2.dropna(subset=[loss]), x="step", y=loss, hue="run", ax=axes[1],
                     legend=stage2.run.nunique() > 1)  # one run: the title names it, a legend would hide the curve
    axes[1].set(title="stage 2: alignment loss (training)", ylabel=loss)
    dev = stage2.dropna(subset=["validation_sts"])[["step", "validation_sts", "run"]]
    if contrastive is not None and len(contrastive):
        dev = pd.concat([dev, contrastive.dropna(subset=["validation_sts"]).assign(run=contrastive.model)[
            ["step", "validation_sts", "run"]]], ignore_index=True)
    if len(dev):
        sns.lineplot(data=dev, x="step", y="validation_sts", hue="run", marker="o", ax=axes[2])
        # below the axis label: the curves span the panel, so no corner of it is free
        sns.move_legend(axes[2], "upper center", bbox_to_anchor=(0.5, 0), borderaxespad=3.5, ncol=2, frameon=False,
                        fontsize=9)
    axes[2].set(title="STS-B dev during training", ylabel="Spearman x100")
    fig.tight_layout()
    return fig
