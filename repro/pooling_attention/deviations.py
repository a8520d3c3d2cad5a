"""Paper 1's deviations from the paper and its official code, as a table: the official side quoted (with the
repository and commit it was read at), our side generated from the configuration the runs train with
(:func:`repro.pooling_attention.trained.converged_config`) and the stored run records (the head's parameter
count), so no number of ours is typed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

import pandas as pd

from repro.core.tasks import TASKS
from repro.pooling_attention.trained import converged_config
from repro.store.results import load_result
from repro.training.contrastive import RUNS_EXPERIMENT
from repro.training.data import DATASETS

OFFICIAL = "yixuantt/PoolingAndAttn@57791d5"  # as read on 2026-12-02 (repro.pages.paper_profile.SOURCES["1"])
QUOTED = {  # the paper and its official code, quoted
    "backbone": "Mistral-7B-v0.1 for the five designs, Qwen2-0.5B for Table 5's robustness check; Llama-3-8B "
                "appears only in the layer analysis",
    "training data, budget": "2,048 examples per step x 1,000 steps of its mixture",
    "optimiser": "lr 1e-5, 100 warm-up steps, linear decay over 1,000",
    "LoRA": "r 16, alpha 32, dropout 0.1 on every projection",
    "loss, negatives": "HardNegativeNLLLoss() at its default scale 20 (tau 0.05: loss/HardNegativeNLLLoss.py:81; "
                       "every trainer builds it without the loss_scale argument, model1_trainer.py:315 to "
                       "model5_trainer.py:336), per-device batch 1 x 256 accumulation on 8 devices, so a query sees "
                       "the 8 positives and 8 hard negatives gathered across devices (15 negatives)",
    "pooling head": "PerceiverResampler: 768 latents, cross-attention of 32 heads x 2,048 dims (inner width 16 d; "
                    "~1.07 B of its ~1.28 B parameters), latents and layer embedding N(0, 1); model 4's head does "
                    "not mask padding, which matters only at evaluation (training puts one example on each device)",
    "evaluation inputs": "E5-style task instructions glued before every text (queries only for retrieval)",
    "tasks": "mteb_task.py's 47-entry list (STS 8, classification 6, clustering 11, pair classification 3, "
             "reranking 4, retrieval 14, summarization 1); neither STS17 nor AmazonCounterfactualClassification",
}


def head_parameters(backbone: str) -> dict[int, int]:
    """Per design with a trainable pooling head (models 2, 3 and 5): its parameter count on ``backbone``, from a
    stored converged run (designs without a stored run are absent)."""
    out = {}
    for model in (2, 3, 5):
        for seed in (0, 1, 2):
            record = load_result(RUNS_EXPERIMENT, {"train": converged_config(backbone, model, seed).identity()})
            if record is not None and record["summary"].get("head_parameters"):
                out[model] = int(record["summary"]["head_parameters"])
                break
    return out


def _millions(counts: dict[int, int]) -> str:
    return ", ".join(f"model {m} {n / 1e6:.2f} M" for m, n in counts.items()) or "no run stored yet"


def deviation_table(backbones: Sequence[str], suite: str = "compact",
                    tasks: dict[str, Sequence[str] | None] | None = None) -> pd.DataFrame:
    """Rows: what differs; columns: the paper / official code (quoted) and ours (from the configuration).
    ``tasks``: per backbone, the tasks its runs are scored on (None or absent: every task of the suite)."""
    if not backbones:
        raise ValueError("deviation_table: no backbone given")
    counts = {b: len((tasks or {}).get(b) or TASKS) for b in backbones}
    c = converged_config(backbones[0])
    dropout = "no dropout (a declared change: dropout doubled the step's cost here)" if not c.lora_dropout \
        else f"dropout {c.lora_dropout}"
    heads = "; ".join(f"{b}: {_millions(head_parameters(b))}" for b in backbones)
    files = ", ".join(PurePosixPath(f).parent.name for f in DATASETS[c.data])
    ours = {
        "backbone": ", ".join(backbones) + " (GGUF, dequantized to fp32)",
        "training data, budget": f"the declared training mix '{c.data}' ({files}), {c.batch_size} rows per step, "
                                 f"dev-stopped under a "
                                 f"{c.steps}-step cap",
        "optimiser": f"lr {c.lr:g} {c.schedule.replace('_', ' ')} ({c.warmup_steps} warm-up steps; LoRA on a small "
                     "model; constant so that budgets are honest)",
        "LoRA": f"r {c.lora_r}, alpha {c.lora_alpha}, {dropout}",
        "loss, negatives": f"InfoNCE, tau {c.temperature:g}, each query against the batch's {c.batch_size} "
                           "positives and its hard negatives (pairs have none)",
        "pooling head": f"{c.head_latents} latents, nn.MultiheadAttention(d, {c.head_heads}), the official GEGLU "
                        f"widths, latents N(0, 1/d), layer embedding 0, padding masked; parameters ({heads})",
        "evaluation inputs": "plain text + EOS as in training; the instruction variant is scored too where stored "
                             "(repro train --instructions; section above), tokenized in two pieces instead of one "
                             "call",
        "tasks": "; ".join(f"{b}: {n}" for b, n in counts.items())
                 + f" offline tasks at '{suite}' caps (STS22 and several others are not offline)"
                 + "".join(f"; {b} leaves out {', '.join(sorted(set(TASKS) - set(tasks[b])))} (the page's "
                           "backbone_tasks parameter)" for b in backbones if (tasks or {}).get(b)
                           and set(TASKS) - set(tasks[b])),
    }
    return pd.DataFrame({f"the paper / official code (quoted, {OFFICIAL})": QUOTED, "here": ours})
