"""The methods AutoRegEmbed is compared with: the untrained backbone (last token, mean, PromptEOL) and the
contrastive baselines trained on the same triplets with the shared contrastive trainer."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from repro.autoregembed.config import AlignConfig
from repro.autoregembed.experiments.scores import RETRIEVAL_TASKS
from repro.core.backbones import STORED_DTYPE, load_backbone
from repro.core.encode import EncodeConfig
from repro.core.evaluate import evaluate_encoders, states_encoder
from repro.core.suites import describe_suite, suite_caps
from repro.core.tasks import STS_TASKS, check_task_names, data_fingerprint, suite_task
from repro.store.lanes import in_lane_order
from repro.store.results import all_results, encode_array, load_or_compute
from repro.training import budget
from repro.training.contrastive import TrainConfig
from repro.training.data import DATASETS

UNTRAINED_EXPERIMENT = "autoreg_untrained"
UNTRAINED = {  # label -> (prompt, pooling)
    "last token": ("none-noeos", "last"),
    "mean": ("none-noeos", "mean"),
    "PromptEOL": ("prompteol", "last"),
}

log = logging.getLogger(__name__)


def evaluate_untrained(backbone: str, suite: str = "compact", tasks: Sequence[str] | None = None,
                       max_length: int = 512, progress: bool = True, recompute: bool = False,
                       labels: Sequence[str] | None = None) -> pd.DataFrame:
    """The raw backbone's last layer (last token and mean, no prompt) and PromptEOL, per task (stored);
    ``labels``: only these of :data:`UNTRAINED` (None: all three)."""

    suite_caps(suite)
    tasks = check_task_names(list(tasks) if tasks is not None else STS_TASKS + RETRIEVAL_TASKS)
    labels = list(labels) if labels is not None else list(UNTRAINED)
    unknown = set(labels) - set(UNTRAINED)
    if unknown:
        raise ValueError(f"unknown untrained method(s) {sorted(unknown)}; valid: {', '.join(UNTRAINED)}")
    state: dict = {}
    runs = {}
    for name in tasks:
        for label in labels:
            prompt, pooling = UNTRAINED[label]
            params = {"backbone": backbone, "prompt": prompt, "pooling": pooling, "max_length": max_length,
                      "suite": suite, "caps": describe_suite(suite), "task": name, "data": data_fingerprint(name)}

            def compute(prompt=prompt, pooling=pooling, label=label, name=name):
                if "backbone" not in state:
                    state["backbone"] = load_backbone(backbone, dtype=STORED_DTYPE)
                model = state["backbone"]
                # every pooling of this prompt from one forward (the cache then serves the other label)
                poolings = tuple(sorted({pool for pr, pool in UNTRAINED.values() if pr == prompt}))
                config = EncodeConfig(prompt=prompt, poolings=poolings, max_length=max_length,
                                      layers=(model.num_layers,))
                sims: dict = {}
                rows = evaluate_encoders([suite_task(name, suite)], [({"method": label},
                                         states_encoder(model, config, pooling))], progress=False, pair_similarities=sims)
                extra = {"pair_similarities": encode_array(next(iter(sims.values())))} if sims else {}
                return rows, {}, extra

            def run(params=params, compute=compute, label=label, name=name):
                frame = pd.DataFrame(load_or_compute(UNTRAINED_EXPERIMENT, params, compute, recompute=recompute)
                                     ["rows"]).assign(method=label)
                if progress:
                    log.info("%s %s: %.4f", label, name, frame["main_score"].mean())
                return frame

            runs[name, label] = run
    return pd.concat(in_lane_order(runs).values(), ignore_index=True)


# AutoRegEmbed's contrastive baselines (its Figure 3: Lasttoken/Mean x InBatch/HardNeg), trained by repro.training.contrastive
# on the same triplets with the same step budget and batch size
CONTRASTIVE = {  # label -> (repro.training.contrastive model, hard negatives)
    "last token, in-batch": (1, False),
    "last token, in-batch + hard negative": (1, True),
    "mean, in-batch": ("mean", False),
    "mean, in-batch + hard negative": ("mean", True),
}


def contrastive_config(label: str, align: AlignConfig, lr: float = 1e-4) -> TrainConfig:
    """The contrastive baseline ``label`` on the alignment stage's data: the same triplets (split and
    subset), steps, batch size and seed; LoRA as in Paper 1's trainer, lr 1e-4 (the paper's best for its
    in-batch baselines), max length = the alignment encoder's."""

    if label not in CONTRASTIVE:
        raise ValueError(f"unknown contrastive baseline '{label}'; valid: {', '.join(CONTRASTIVE)}")
    if align.data not in DATASETS:
        raise ValueError(f"the contrastive baselines train on {', '.join(DATASETS)}, not '{align.data}'")
    model, hard = CONTRASTIVE[label]
    config = TrainConfig(backbone=align.backbone, model=model, hard_negatives=hard, steps=align.steps,
                         batch_size=align.batch_size, lr=lr, warmup_steps=align.warmup_steps,
                         max_length=align.max_length, validation_triplets=align.validation_triplets,
                         validation_sts_pairs=align.validation_sts_pairs, train_examples=align.train_examples,
                         seed=align.seed, eval_every=align.eval_every, checkpoint_every=align.checkpoint_every,
                         data=align.data)
    if align.stopping == "dev":  # the same budget rule and cap as the alignment stage (packed steps: same loss)
        config = replace(budget.under_budget_rule(config, align.steps), packing=True)
    return config


def stored_untrained(backbone: str, suite: str = "compact", max_length: int = 512) -> dict[str, dict[str, dict]]:
    """The stored untrained scores, read only: ``{label of UNTRAINED: {task: record}}`` for ``backbone``, ``suite``
    and ``max_length``, on the tasks' current data."""
    labels = {spec: label for label, spec in UNTRAINED.items()}
    found: dict[str, dict[str, dict]] = {label: {} for label in UNTRAINED}

    def wanted(p: dict) -> bool:
        return ((p["prompt"], p["pooling"]) in labels and p["backbone"] == backbone and p["suite"] == suite
                and p["max_length"] == max_length and p["data"] == data_fingerprint(p["task"]))

    for record in all_results(UNTRAINED_EXPERIMENT, where=wanted):
        p = record["params"]
        found[labels[(p["prompt"], p["pooling"])]][p["task"]] = record
    return found
