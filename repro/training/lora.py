"""LoRA adapters (peft) on every attention and MLP projection: the one place a ``LoraConfig`` is built."""

from __future__ import annotations

from torch import nn

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def add_lora(model: nn.Module, r: int, alpha: int, dropout: float) -> nn.Module:
    """``model`` wrapped by peft with rank-``r`` adapters on :data:`LORA_TARGETS` (no bias)."""
    from peft import LoraConfig, get_peft_model  # (here: peft costs 2-5 s to import, and reading pages need none)

    config = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(LORA_TARGETS), bias="none")
    return get_peft_model(model, config)
