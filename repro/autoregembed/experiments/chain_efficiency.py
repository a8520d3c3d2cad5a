"""Figure 3 on the independent chains: the data-efficiency page's stage-2 runs (its training-set sizes, epochs, data,
learning rate and batch, every method alike), each started from one chain's own stage 1 (:mod:`.independent`: under
the budget rule, the principled template) instead of the one 300-step stage 1 the page's seeds share; the contrastive
baselines at the chains' seeds on the same subsets. A run's unit is the stage-1 weights it started from (its
record's ``initial_digest``), so no two AutoRegEmbed points of one size share an upstream model; compression only is
scored from those same weights.

The page's parameters are the caller's (a paper package does not read the book's page tables): ``page_base`` is the
page's stage-2 configuration (:func:`repro.autoregembed.experiments.configs.page_configs`), ``sizes`` and ``epochs``
its own. ``scripts/p3_figure3_chains.py`` trains and scores them (resumable); the pages read the store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from repro.autoregembed.claims import data_efficiency_claims
from repro.autoregembed.config import TEMPLATE_SETTINGS, AlignConfig
from repro.autoregembed.experiments import converged, independent
from repro.autoregembed.experiments.baselines import contrastive_config
from repro.autoregembed.experiments.data_efficiency import data_efficiency_configs, data_efficiency_scores, sts_of
from repro.autoregembed.experiments.scores import SCORES_EXPERIMENT, score_identity
from repro.core.scoring import stored_per_task
from repro.core.tasks import STS_TASKS
from repro.training import evaluation as contrastive_scores

AUTOREG = "AutoRegEmbed"
COMPRESSION_ONLY = "compression only"
COLUMNS = ["method", "examples", "seed", "steps", "unit", "STS average"]


def chain_base(seed: int, page_base: AlignConfig) -> AlignConfig:
    """The page's stage 2 started from chain ``seed``'s stage 1, its inputs written in that stage 1's template."""
    stage1 = independent.stage1_config(seed, page_base.backbone)
    return replace(page_base, compress=stage1, seed=seed, template=stage1.template, cut=stage1.cut, bos=stage1.bos,
                   **TEMPLATE_SETTINGS[stage1.template])


def chain_configs(seed: int, page_base: AlignConfig, sizes: Sequence[int], epochs: float) -> dict[int, AlignConfig]:
    """Training-set size -> chain ``seed``'s stage-2 configuration at that size (the page's steps per size)."""
    configs = data_efficiency_configs(chain_base(seed, page_base), sizes, [seed], epochs)
    return {size: config for (size, _), config in configs.items()}


def run(seeds: Sequence[int], page_base: AlignConfig, sizes: Sequence[int], epochs: float, methods: Sequence[str],
        suite: str = "small", tasks: Sequence[str] | None = None) -> None:
    """Train and score (or resume) each chain's points: every method of ``methods`` at every size at the chain's seed
    (AutoRegEmbed from the chain's stage 1, the contrastive baselines on the same subsets), then compression only
    from each stage-1 weights digest the chain's AutoRegEmbed runs started from."""
    tasks = list(tasks) if tasks is not None else STS_TASKS
    for seed in seeds:
        base = chain_base(seed, page_base)
        data_efficiency_scores(base, sizes, [seed], epochs, methods, suite, tasks)
        if AUTOREG in methods:
            for digest in sorted({converged.start_digest(c) for c in chain_configs(seed, page_base, sizes,
                                                                                     epochs).values()}):
                converged.score_stage1(base.compress, digest, suite, tasks, progress=False)


# ----- read from the result store only (the pages) -----

def curve(page_base: AlignConfig, sizes: Sequence[int], epochs: float, methods: Sequence[str],
          seeds: Sequence[int] = independent.SEEDS, suite: str = "small",
          tasks: Sequence[str] | None = None) -> pd.DataFrame:
    """The chains' stored points (:data:`COLUMNS`, STS average x100), read only: AutoRegEmbed's at each chain and size
    whose run and every task are stored (unit: the stage-1 weights it started from), and each contrastive baseline's
    at the chains' seeds (unit: its own run)."""
    tasks = list(tasks) if tasks is not None else STS_TASKS
    rows = []
    for seed in seeds:
        for size, config in chain_configs(seed, page_base, sizes, epochs).items():
            for method in methods:
                if method == AUTOREG:
                    record = converged.run_record(config)
                    found = stored_per_task(SCORES_EXPERIMENT, score_identity(config), suite, tasks)
                    unit = None if record is None else f"stage 1 {record['summary'].get('initial_digest')}"
                else:
                    baseline = contrastive_config(method, config)
                    found = stored_per_task(contrastive_scores.SCORES_EXPERIMENT,
                                            contrastive_scores.score_identity(baseline), suite, tasks)
                    unit = f"run {seed}"
                if unit is not None and len(found) == len(tasks):
                    rows.append({"method": method, "examples": size, "seed": seed, "steps": config.steps,
                                 "unit": unit, "STS average": sts_of(found)})
    return pd.DataFrame(rows, columns=COLUMNS)


def compression_only(page_base: AlignConfig, seeds: Sequence[int] = independent.SEEDS, suite: str = "small",
                     tasks: Sequence[str] | None = None, sizes: Sequence[int] = (), epochs: float = 1.0) -> pd.DataFrame:
    """Compression only per chain (seed, unit, STS average x100), read only: scored from the stage-1 weights the
    chain's stored AutoRegEmbed points started from (``sizes``, ``epochs``: the page's), where every task is stored."""
    tasks = list(tasks) if tasks is not None else STS_TASKS
    rows = []
    for seed in seeds:
        stage1 = chain_base(seed, page_base).compress
        digests = {r["summary"].get("initial_digest") for r in map(converged.run_record, chain_configs(
            seed, page_base, sizes, epochs).values()) if r is not None}
        for digest in sorted(d for d in digests if d):
            found = converged.compression_scores(stage1, digest, suite, tasks)
            if len(found) == len(tasks):
                rows.append({"seed": seed, "unit": f"stage 1 {digest}", "STS average": sts_of(found)})
    return pd.DataFrame(rows, columns=["seed", "unit", "STS average"])


def status(page_base: AlignConfig, sizes: Sequence[int], epochs: float, methods: Sequence[str],
           seeds: Sequence[int] = independent.SEEDS, suite: str = "small",
           tasks: Sequence[str] | None = None) -> pd.DataFrame:
    """Method x size: how many of the chains' seeds have the point stored (e.g. "1 of 3"), read only."""
    points = curve(page_base, sizes, epochs, methods, seeds, suite, tasks)
    counts = points.groupby(["method", "examples"]).size()
    return pd.DataFrame({size: [f"{int(counts.get((m, size), 0))} of {len(seeds)}" for m in methods]
                         for size in sizes}, index=pd.Index(methods, name="method")).rename_axis(
        columns="training triplets")


def points(page_base: AlignConfig, sizes: Sequence[int], epochs: float, methods: Sequence[str],
           seeds: Sequence[int] = independent.SEEDS, suite: str = "small",
           tasks: Sequence[str] | None = None) -> pd.DataFrame:
    """:func:`curve` plus each chain's compression only (:func:`compression_only`) repeated at every size (method
    "compression only", its unit the chain's stage-1 weights): what the claims test."""
    frame = curve(page_base, sizes, epochs, methods, seeds, suite, tasks)
    compression = compression_only(page_base, seeds, suite, tasks, sizes, epochs)
    repeated = [{"method": COMPRESSION_ONLY, "examples": size, "seed": r["seed"], "steps": 0, "unit": r["unit"],
                 "STS average": r["STS average"]} for _, r in compression.iterrows() for size in sizes]
    return pd.concat([frame, pd.DataFrame(repeated, columns=COLUMNS)], ignore_index=True) if repeated else frame


def tested(page_base: AlignConfig, sizes: Sequence[int], epochs: float, methods: Sequence[str],
           references: pd.Series | None = None, seeds: Sequence[int] = independent.SEEDS, suite: str = "small",
           tasks: Sequence[str] | None = None) -> pd.DataFrame | None:
    """The data-efficiency statements tested on the chains (:func:`repro.autoregembed.claims.data_efficiency_claims`,
    runs as units), once every method has every size at every seed and every chain its compression only; None
    before (the page's shared-stage-1 runs stay the current ones). ``references``: the training-free ones
    (PromptEOL), fixed values; compression only comes from the chains."""
    frame = points(page_base, sizes, epochs, methods, seeds, suite, tasks)
    counts = frame.groupby(["method", "examples"]).size()
    wanted = [*methods, *([COMPRESSION_ONLY] if AUTOREG in methods else [])]
    if any(counts.get((m, size), 0) < len(seeds) for m in wanted for size in sizes):
        return None
    fixed = None if references is None else references.drop(COMPRESSION_ONLY, errors="ignore")
    return data_efficiency_claims(frame, references=fixed)
