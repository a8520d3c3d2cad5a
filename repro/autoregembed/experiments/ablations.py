"""Ablations (paper Table 4, Appendix F): loss variants, alignment strategies and the temperature x beta grid,
each a stage-2 run from one stage 1."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd

from repro.autoregembed.config import (
    AlignConfig,
)
from repro.autoregembed.experiments.scores import evaluate_autoreg
from repro.core.tasks import STS_TASKS
from repro.store.lanes import in_lane_order

ABLATIONS = {
    "full (Eq. 2, sigmoid)": {},
    "without compression": {"compress": None},
    "log-sigmoid": {"squash": "logsigmoid"},
    "KL divergence": {"divergence": "kl"},
    "JS divergence": {"divergence": "js"},
    "tanh": {"squash": "tanh"},
    "reference added (official code)": {"reference_sign": "code"},
    "strategy 1: q as target": {"strategy": 1},
    "strategy 2: q and d+ anchors": {"strategy": 2},
    "strategy 3: + p(d+|e_d+) over p(d-|e_d+)": {"strategy": 3},
    "strategy 4: + p(d-|e_d-) over p(d+|e_d-)": {"strategy": 4},
}


def ablation_config(label: str, base: AlignConfig) -> AlignConfig:
    if label not in ABLATIONS:
        raise ValueError(f"unknown ablation '{label}'; valid: {', '.join(ABLATIONS)}")
    return AlignConfig(**(vars(base) | ABLATIONS[label]))

def grid_label(temperature: float, beta: float) -> str:
    """The variant label of one temperature x beta cell of the ablation grid (1 and 1.0 name one cell)."""
    return f"tau={float(temperature)}, beta={float(beta)}"


def grid_cells(labels) -> dict[str, tuple[float, float]]:
    """The grid cells among variant ``labels`` (:func:`grid_label`'s), each with its (temperature, beta)."""
    cells = {}
    for label in labels:
        match = re.fullmatch(r"tau=([0-9.e+-]+), beta=([0-9.e+-]+)", str(label))
        if match:
            cells[label] = (float(match[1]), float(match[2]))
    return cells


def ablation_configs(base: AlignConfig, labels: Sequence[str], temperatures: Sequence[float],
                     betas: Sequence[float]) -> dict[str, AlignConfig]:
    """variant label -> stage-2 configuration: the named ablations, then the temperature x beta grid."""
    configs = {label: ablation_config(label, base) for label in labels}
    for temperature in temperatures:
        for beta in betas:
            configs[grid_label(temperature, beta)] = AlignConfig(**(vars(base) | {"temperature": temperature,
                                                                                       "beta": beta}))
    return configs


def ablation_scores(base: AlignConfig, labels: Sequence[str], temperatures: Sequence[float], betas: Sequence[float],
                    suite: str = "compact", tasks: Sequence[str] | None = None,
                    recompute: bool = False) -> pd.DataFrame:
    """Per-task scores (column ``variant``; the grid's also ``temperature`` and ``beta``) of
    :func:`ablation_configs`, plus compression only (without alignment)."""
    tasks = list(tasks) if tasks is not None else STS_TASKS
    configs = ablation_configs(base, labels, temperatures, betas)
    runs = {label: configs[label] for label in labels}
    if base.compress is not None and "without alignment (compression only)" not in labels:
        runs["without alignment (compression only)"] = base.compress
    grid = {variant: config for variant, config in configs.items() if variant not in labels}  # tau x beta
    frames = in_lane_order({variant: lambda config=config: evaluate_autoreg(config, suite, tasks, progress=False,
                                                                            recompute=recompute)
                            for variant, config in (runs | grid).items()})
    return pd.concat([frame.assign(variant=variant, **({"temperature": grid[variant].temperature,
                                                       "beta": grid[variant].beta} if variant in grid else {}))
                      for variant, frame in frames.items()], ignore_index=True)


# The paper's numbers, quoted (never computed here). Source: AutoRegEmbed (arXiv 2502.11401) Tables 1 and 3
# and Figure 1, LLaMA2-7B unless named, STS = Spearman x100 averaged over 10 STS datasets; as summarised in
