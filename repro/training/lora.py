"""LoRA adapters (peft) on every attention and MLP projection: the one place a ``LoraConfig`` is built."""

from __future__ import annotations

import copy

from torch import nn

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def add_lora(model: nn.Module, r: int, alpha: int, dropout: float) -> nn.Module:
    """``model`` wrapped by peft with rank-``r`` adapters on :data:`LORA_TARGETS` (no bias)."""
    from peft import LoraConfig, get_peft_model  # (here: peft costs 2-5 s to import, and reading pages need none)

    config = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(LORA_TARGETS), bias="none")
    return get_peft_model(model, config)


def merged_for_inference(model: nn.Module) -> nn.Module:
    """A copy of a :class:`repro.training.contrastive.EmbeddingModel` whose LoRA adapters are merged into the
    projections (peft ``merge_and_unload``): the same embeddings within float tolerance (the merged weight is
    ``W + (alpha/r) B A`` in fp32) from plain linear layers, without the two extra matmuls per projection that an
    unmerged adapter costs at every forward. For no-gradient use only (dev evaluation, scoring); the trained
    ``model`` is left untouched (merging in place and unmerging later would not restore ``W`` bit for bit). A
    model without adapters, or off the CPU, is returned as it is: on a GPU the copy would double the model's memory
    (14 GB more for a 7B model in bf16 at the paper's scale) for launches that cost little there."""
    from peft import PeftModel  # (here: peft costs 2-5 s to import, and reading pages need none)

    if not isinstance(model.backbone.model, PeftModel) or next(model.parameters()).device.type != "cpu":
        return model
    merged = copy.deepcopy(model)
    merged.backbone.model = merged.backbone.model.merge_and_unload()
    merged.lm = merged.backbone.model
    return merged.eval()
