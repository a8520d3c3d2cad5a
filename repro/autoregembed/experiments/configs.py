"""The stage-1 and stage-2 configurations of a Paper 3 page, from its parameters."""

from __future__ import annotations

from repro.autoregembed.config import AlignConfig, CompressConfig
from repro.core.params import check_params

PAGE_PARAMETERS = {  # the parameters every Paper 3 page shares, with their types (papermill -p checks)
    "profile": str, "backbone": str, "suite": str, "finetune": str, "compress_steps": int, "compress_max_length": int,
    "compress_lr": float, "compress_data": str, "align_steps": int, "align_lr": float, "warmup_steps": int, "batch_size": int,
    "train_examples": int, "validation_examples": int, "validation_sts_pairs": int, "validation_triplets": int, "seed": int,
    "recompute": bool}


def page_configs(**params) -> tuple[CompressConfig, AlignConfig]:
    """A Paper 3 page's parameters (checked: clear errors for wrong types) -> the stage-1 and stage-2 configs."""

    missing = set(PAGE_PARAMETERS) - set(params)
    if missing:
        raise TypeError(f"missing page parameters: {', '.join(sorted(missing))}")
    check_params(**{name: (params[name], PAGE_PARAMETERS[name]) for name in PAGE_PARAMETERS}, tasks=(params.get("tasks"), (list, str), True))
    p = params
    compress = CompressConfig(backbone=p["backbone"], finetune=p["finetune"], steps=p["compress_steps"],
                              batch_size=p["batch_size"], lr=p["compress_lr"], max_length=p["compress_max_length"],
                              validation_examples=p["validation_examples"], warmup_steps=p["warmup_steps"],
                              data=p["compress_data"])
    base = AlignConfig(compress=compress, backbone=p["backbone"], finetune=p["finetune"], steps=p["align_steps"],
                       batch_size=p["batch_size"], lr=p["align_lr"], train_examples=p["train_examples"], seed=p["seed"],
                       validation_sts_pairs=p["validation_sts_pairs"], validation_triplets=p["validation_triplets"],
                       warmup_steps=p["warmup_steps"])
    return compress, base


STAGE1_DESCRIPTION = {"instruction": "instruction examples (T0 + self-instruct, ",
                      "autoencode": "Wikipedia paragraphs, autoencoded (WikiText-2; target = the paragraph's start, "}

def steps_for(examples: int, epochs: float, batch_size: int) -> int:
    """Optimizer steps for ``epochs`` passes over ``examples`` triplets (at least one step)."""
    return max(1, round(epochs * examples / batch_size))
