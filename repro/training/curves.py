"""Training curves of stored contrastive runs (training loss, validation metrics), as a table and a figure;
:func:`with_rolling_loss` serves every training's curves."""

from __future__ import annotations

from collections.abc import Iterable

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from repro.training.contrastive import TrainConfig
from repro.training.evaluation import stored_runs


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
        raise ValueError("none of these runs is stored yet: train them first (python -m repro.pooling_attention.trained ...)")
    return with_rolling_loss(pd.concat(frames, ignore_index=True), ["backbone", "model"], rolling)


def with_rolling_loss(curves: pd.DataFrame, by: list[str], rolling: int) -> pd.DataFrame:
    """``curves`` plus the training loss's rolling mean over ``rolling`` logged steps within each ``by`` group
    (column ``train loss (rolling N)``). Validation rows are skipped: they carry no loss (step 0) or repeat the
    loss of their step's training row, so each step counts once."""
    if not (isinstance(rolling, int) and rolling >= 1):
        raise ValueError(f"rolling must be a positive integer, got {rolling!r}")
    curves = curves.copy()
    column = f"train loss (rolling {rolling})"
    logged = curves["train_loss"].notna()
    logged[logged] = ~curves[logged].duplicated(subset=[*by, "step"])  # a step's first row with a loss
    curves[column] = float("nan")
    curves.loc[logged, column] = curves[logged].groupby(by)["train_loss"].transform(
        lambda x: x.rolling(rolling, min_periods=1).mean())
    return curves


def plot_training_curves(curves: pd.DataFrame):
    """Training loss (rolling mean) and STS-B dev Spearman x100 per model (hue) and backbone (line style)."""
    loss = next(c for c in curves.columns if c.startswith("train loss (rolling"))
    fig, axes = plt.subplots(1, 2, figsize=(8, 4.4))
    sns.lineplot(data=curves.dropna(subset=["train_loss"]), x="step", y=loss, hue="model", style="backbone",
                 ax=axes[0])
    sns.lineplot(data=curves.dropna(subset=["validation_sts"]), x="step", y="validation_sts", hue="model",
                 style="backbone", marker="o", ax=axes[1])
    axes[1].set_ylabel("STS-B dev Spearman x100")
    # one legend for both panels (the same hues and styles), below them: never over a curve
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes:
        ax.get_legend().remove()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 8), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig
