"""Tables 1-2: every method's per-task scores and training curves at one setting."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from repro.autoregembed.config import AlignConfig
from repro.autoregembed.experiments.baselines import CONTRASTIVE, UNTRAINED, contrastive_config, evaluate_untrained
from repro.autoregembed.experiments.curves import autoreg_training_curves
from repro.autoregembed.experiments.scores import RETRIEVAL_TASKS, evaluate_autoreg
from repro.core.tasks import STS_TASKS
from repro.store.lanes import in_lane_order
from repro.training.curves import training_curves
from repro.training.evaluation import evaluate_trained


def page_tasks(tasks: Sequence[str] | None = None) -> list[str]:
    """The tasks of the Tables 1-2 page: ``tasks``, or by default the STS tasks and the retrieval pair."""
    return list(tasks) if tasks is not None else STS_TASKS + RETRIEVAL_TASKS


def method_scores(align: AlignConfig, suite: str = "compact", tasks: Sequence[str] | None = None,
                  methods: Sequence[str] | None = None, recompute: bool = False, progress: bool = False) -> pd.DataFrame:
    """Per-task scores (column ``method``) of Table 1/2's methods: the untrained backbone (last token, mean,
    PromptEOL), the contrastive baselines on the same triplets, compression only, and AutoRegEmbed."""

    tasks = page_tasks(tasks)
    every = [*UNTRAINED, *CONTRASTIVE, "compression only", "AutoRegEmbed"]
    methods = list(methods) if methods is not None else every
    unknown = set(methods) - set(every)
    if unknown:
        raise ValueError(f"unknown method(s) {sorted(unknown)}; valid: {', '.join(every)}")
    frames = []
    if set(methods) & set(UNTRAINED):
        frames.append(evaluate_untrained(align.backbone, suite, tasks, progress=progress, recompute=recompute,
                                         labels=[label for label in UNTRAINED if label in methods]))
    runs = {}
    for label in methods:
        if label in CONTRASTIVE:
            runs[label] = lambda label=label: evaluate_trained(contrastive_config(label, align), suite, tasks,
                                                               progress=progress, recompute=recompute)
        elif label == "compression only" and align.compress is not None:
            runs[label] = lambda: evaluate_autoreg(align.compress, suite, tasks, progress=progress,
                                                   recompute=recompute)
        elif label == "AutoRegEmbed":
            runs[label] = lambda: evaluate_autoreg(align, suite, tasks, progress=progress, recompute=recompute)
    frames += [frame.assign(method=label) for label, frame in in_lane_order(runs).items()]
    return pd.concat(frames, ignore_index=True)


def method_training_curves(align: AlignConfig, methods: Sequence[str] | None = None, rolling: int = 10):
    """The stored training curves of Table 1/2's trained methods: ``(autoreg, contrastive)``, the AutoRegEmbed
    stages' frame (:func:`repro.training.curves.autoreg_training_curves`; stage 1 for "compression only" or
    "AutoRegEmbed") and the contrastive baselines' (:func:`repro.training.curves.training_curves`, column
    ``model`` = the baseline's label), each None when no such method is asked for."""

    methods = list(methods) if methods is not None else [*CONTRASTIVE, "compression only", "AutoRegEmbed"]
    runs = {}
    if align.compress is not None and {"compression only", "AutoRegEmbed"} & set(methods):
        runs["stage 1 (compression)"] = align.compress
    if "AutoRegEmbed" in methods:
        runs["AutoRegEmbed (stage 2)"] = align
    autoreg = autoreg_training_curves(runs, rolling) if runs else None
    baselines = [label for label in methods if label in CONTRASTIVE]
    contrastive = (pd.concat([training_curves([contrastive_config(label, align)], rolling).assign(model=label)
                              for label in baselines], ignore_index=True) if baselines else None)
    return autoreg, contrastive


def sts_average(frame: pd.DataFrame) -> float:
    """Mean STS main score x100 (a task's subsets averaged first)."""
    sts = frame[frame.category == "STS"]
    return float(sts.groupby("task")["main_score"].mean().mean() * 100) if len(sts) else float("nan")
