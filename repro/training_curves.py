"""Training curves of stored Paper 1 runs (training loss, STS-B dev Spearman), as a table and a figure."""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from repro.train import TrainConfig
from repro.trained import stored_runs


def training_curves(configs: Iterable[TrainConfig], rolling: int = 10) -> pd.DataFrame:
    """One row per logged step of each stored run in ``configs`` (columns ``backbone``, ``model``, ``step``,
    ``train_loss``, ``validation_sts`` and the loss's rolling mean over ``rolling`` steps); runs not stored yet
    are left out."""
    frames = []
    for config in configs:
        run = [r for r in stored_runs(config.backbone) if r["params"]["train"] == config.identity()]
        if run:
            frames.append(pd.DataFrame(run[0]["rows"]).assign(backbone=config.backbone, model=str(config.model)))
    if not frames:
        raise ValueError("none of these runs is stored yet: train them first (python -m repro.trained ...)")
    curves = pd.concat(frames, ignore_index=True)
    curves[f"train loss (rolling {rolling})"] = curves.groupby(["backbone", "model"])["train_loss"].transform(
        lambda x: x.rolling(rolling, min_periods=1).mean())
    return curves


def plot_training_curves(curves: pd.DataFrame):
    """Training loss (rolling mean) and STS-B dev Spearman x100 per model (hue) and backbone (line style)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    loss = next(c for c in curves.columns if c.startswith("train loss (rolling"))
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6))
    sns.lineplot(data=curves.dropna(subset=["train_loss"]), x="step", y=loss, hue="model", style="backbone",
                 ax=axes[0])
    sns.lineplot(data=curves.dropna(subset=["validation_sts"]), x="step", y="validation_sts", hue="model",
                 style="backbone", marker="o", ax=axes[1])
    axes[1].set_ylabel("STS-B dev Spearman x100")
    axes[0].get_legend().remove()  # one legend (the same hues and styles), outside the curves
    sns.move_legend(axes[1], "upper left", bbox_to_anchor=(1.02, 1), frameon=False)
    fig.tight_layout()
    return fig
