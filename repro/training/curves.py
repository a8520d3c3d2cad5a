"""Training curves of stored runs (training loss, validation metrics), as a table and a figure: Paper 1's
contrastive models and Paper 3's two AutoRegEmbed stages."""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from repro.pooling_attention.trained import stored_runs
from repro.training.contrastive import TrainConfig


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


def autoreg_training_curves(runs: dict, rolling: int = 10) -> pd.DataFrame:
    """One row per logged step of each stored AutoRegEmbed run in ``runs`` (label -> CompressConfig or
    AlignConfig; columns ``run``, ``stage``, ``step``, ``train_loss``, ``validation_loss`` (stage 1: held-out
    reconstruction cross-entropy), ``validation_sts`` (stage 2: STS-B dev Spearman x100) and the loss's rolling
    mean); runs not stored yet are left out."""
    from repro.autoregembed.experiments import RUNS_EXPERIMENT, run_params, stage_of
    from repro.store.results import load_result

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
    import matplotlib.pyplot as plt
    import seaborn as sns

    loss = next(c for c in curves.columns if c.startswith("train loss (rolling"))
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.6))
    stage1, stage2 = curves[curves.stage == "compress"], curves[curves.stage == "align"]
    if len(stage1):
        sns.lineplot(data=stage1.dropna(subset=[loss]), x="step", y=loss, hue="run", ax=axes[0])
        sns.lineplot(data=stage1.dropna(subset=["validation_loss"]), x="step", y="validation_loss", hue="run",
                     marker="o", linestyle="--", legend=False, ax=axes[0])
    if uninformative is not None:
        axes[0].axhline(uninformative, color="grey", linestyle=":", label="uninformative memory (held-out)")
        axes[0].legend(fontsize=8)
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
        sns.move_legend(axes[2], "upper left", bbox_to_anchor=(1.02, 1), frameon=False, fontsize=8)
    axes[2].set(title="STS-B dev during training", ylabel="Spearman x100")
    fig.tight_layout()
    return fig


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
