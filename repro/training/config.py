"""The contrastive trainer's settings and its text collator: :class:`TrainConfig` (a run's identity in the stores)
and :class:`Collator` (texts -> right-padded ids with the prompt). Apart from the trainer
(:mod:`repro.training.contrastive`), so that the objective and the training data take them without importing it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from repro.core.encode import EncodeConfig, Tokenizer, pad_id
from repro.core.prompts import get_prompt
from repro.store.identity import config_identity
from repro.training import budget
from repro.training.data import DATASETS, pad_right
from repro.training.heads import model_spec
from repro.training.loop import LoopSettings


@dataclass
class TrainConfig(LoopSettings):
    backbone: str = "smollm2-135m"
    model: int | str = 1  # Tang & Yang's model number (repro.training.heads.MODELS) or a baseline (repro.training.heads.BASELINES)
    data: str = "nli"
    validation_triplets: int = 300  # held out from the training triplets (validation loss)
    steps: int = 200
    batch_size: int = 16  # triplets per global batch (split across processes)
    lr: float = 2e-4
    warmup_steps: int = 20
    weight_decay: float = 0.01
    temperature: float = 0.05
    max_length: int = 64
    prompt: str = "none"  # text + EOS, as Tang & Yang
    lora_dropout: float = 0.1  # (LoopSettings: lora_r 16, lora_alpha 32, seed 0, eval/checkpoint every 50 steps)
    head_latents: int = 32
    head_heads: int = 8
    validation_sts_pairs: int = 500  # STS-B dev pairs for the validation curve
    hard_negatives: bool = True  # False: in-batch negatives only
    train_examples: int = 0  # 0 = every training triplet; n = a seeded subset of n (data-efficiency curves)
    packing: bool = False  # True: one padding-free forward per step (repro.training.packing; same loss and gradients)
    schedule: str = "linear"  # learning rate after warm-up: linear decay to 0 at `steps`, or constant_with_warmup
    stopping: str = "fixed"  # "fixed": train `steps`; "dev": the declared budget rule (repro.training.budget), `steps` = cap

    # fields added after results were stored: left out of the identity while at their defaults, so the
    # stored runs of earlier configurations keep their keys
    ADDED_LATER: ClassVar[tuple[str, ...]] = ("hard_negatives", "train_examples", "packing", "schedule", "stopping",
                                              "accumulation", "max_grad_norm")

    def identity(self) -> dict:
        """The settings that define a run (its key in the result store and its checkpoint check)."""
        return config_identity(self)

    def __post_init__(self):
        model_spec(self.model)
        budget.check_settings(self)
        get_prompt(self.prompt)
        if self.data not in DATASETS:
            raise ValueError(f"unknown training data '{self.data}'; valid: {', '.join(DATASETS)}")
        for name in ("steps", "batch_size", "max_length", "lora_r", "head_latents", "head_heads", "eval_every",
                     "checkpoint_every", "accumulation"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not self.temperature > 0 or not self.lr > 0:
            raise ValueError("temperature and lr must be positive")
        if isinstance(self.train_examples, bool) or not isinstance(self.train_examples, int) or self.train_examples < 0:
            raise ValueError(f"train_examples must be an integer >= 0 (0 = all), got {self.train_examples!r}")


class Collator:
    """Texts -> right-padded ids and mask, with the prompt and prompt-aware truncation of repro.core.encode."""

    def __init__(self, tokenizer, config: TrainConfig, instruction: str = ""):
        enc = EncodeConfig(prompt=config.prompt, max_length=config.max_length, instruction=instruction)
        self.tokenize = Tokenizer(tokenizer, get_prompt(config.prompt), enc)
        self.pad = pad_id(tokenizer)

    def __call__(self, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        return pad_right([self.tokenize(t).ids for t in texts], self.pad)
