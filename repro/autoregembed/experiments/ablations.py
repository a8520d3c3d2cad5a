"""Ablations (paper Table 4, Appendix F): loss variants, alignment strategies and the temperature x beta grid,
each a stage-2 run from one stage 1."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from repro.autoregembed.config import AlignConfig
from repro.autoregembed.experiments.scores import evaluate_autoreg
from repro.core.tasks import STS_TASKS
from repro.store.lanes import in_lane_order

# variant id -> (display label, the AlignConfig fields it changes). Pages and parameters use the short, stable ids;
# tables show the labels; nothing parses a label back.
VARIANTS: dict[str, tuple[str, dict]] = {
    "full": ("full (Eq. 2, sigmoid)", {}),
    "no-compression": ("without compression", {"compress": None}),
    "logsigmoid": ("log-sigmoid", {"squash": "logsigmoid"}),
    "kl": ("KL divergence", {"divergence": "kl"}),
    "js": ("JS divergence", {"divergence": "js"}),
    "tanh": ("tanh", {"squash": "tanh"}),
    "reference-code": ("reference added (official code)", {"reference_sign": "code"}),
    "strategy1": ("strategy 1: q as target", {"strategy": 1}),
    "strategy2": ("strategy 2: q and d+ anchors", {"strategy": 2}),
    "strategy3": ("strategy 3: + p(d+|e_d+) over p(d-|e_d+)", {"strategy": 3}),
    "strategy4": ("strategy 4: + p(d-|e_d-) over p(d+|e_d-)", {"strategy": 4}),
}
LABELS = {variant: label for variant, (label, _) in VARIANTS.items()}
COMPRESSION_ONLY = "without alignment (compression only)"  # the stage-1 model every variant starts from
_GRID: dict[str, tuple[float, float]] = {}  # grid label -> (temperature, beta), filled by grid_label


def ablation_config(variant: str, base: AlignConfig) -> AlignConfig:
    """The stage-2 configuration of variant id ``variant`` (:data:`VARIANTS`) from ``base``."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown ablation '{variant}'; valid: {', '.join(VARIANTS)}")
    return AlignConfig(**(vars(base) | VARIANTS[variant][1]))


def grid_id(temperature: float, beta: float) -> str:
    """The short id of one temperature x beta cell (``tau0.05-beta0.1``; 1 and 1.0 name one cell)."""
    return f"tau{float(temperature)}-beta{float(beta)}"


def grid_label(temperature: float, beta: float) -> str:
    """The display label of one temperature x beta cell of the ablation grid (1 and 1.0 name one cell)."""
    label = f"tau={float(temperature)}, beta={float(beta)}"
    _GRID[label] = (float(temperature), float(beta))
    return label


def grid_cells(labels) -> dict[str, tuple[float, float]]:
    """The grid cells among display ``labels``, each with its (temperature, beta): the labels
    :func:`grid_label` made (looked up, never parsed)."""
    return {label: _GRID[label] for label in labels if label in _GRID}


def ablation_configs(base: AlignConfig, variants: Sequence[str], temperatures: Sequence[float],
                     betas: Sequence[float]) -> dict[str, AlignConfig]:
    """display label -> stage-2 configuration: the variants (ids of :data:`VARIANTS`), then the temperature x
    beta grid."""
    configs = {LABELS[variant]: ablation_config(variant, base) for variant in variants}
    for temperature in temperatures:
        for beta in betas:
            configs[grid_label(temperature, beta)] = AlignConfig(**(vars(base) | {"temperature": temperature,
                                                                                       "beta": beta}))
    return configs


def ablation_scores(base: AlignConfig, variants: Sequence[str], temperatures: Sequence[float], betas: Sequence[float],
                    suite: str = "compact", tasks: Sequence[str] | None = None,
                    recompute: bool = False) -> pd.DataFrame:
    """Per-task scores (column ``variant``: the display label; the grid's also ``temperature`` and ``beta``) of
    :func:`ablation_configs`, plus compression only (without alignment)."""
    tasks = list(tasks) if tasks is not None else STS_TASKS
    configs = ablation_configs(base, variants, temperatures, betas)
    labels = [LABELS[variant] for variant in variants]
    runs = {label: configs[label] for label in labels}
    if base.compress is not None:
        runs[COMPRESSION_ONLY] = base.compress
    grid = {variant: config for variant, config in configs.items() if variant not in labels}  # tau x beta
    frames = in_lane_order({variant: lambda config=config: evaluate_autoreg(config, suite, tasks, progress=False,
                                                                            recompute=recompute)
                            for variant, config in (runs | grid).items()})
    return pd.concat([frame.assign(variant=variant, **({"temperature": grid[variant].temperature,
                                                       "beta": grid[variant].beta} if variant in grid else {}))
                      for variant, frame in frames.items()], ignore_index=True)


# The paper's numbers, quoted (never computed here). Source: AutoRegEmbed (arXiv 2502.11401) Tables 1 and 3
# and Figure 1, LLaMA2-7B unless named, STS = Spearman x100 averaged over 10 STS datasets; as summarised in
