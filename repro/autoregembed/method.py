"""AutoRegEmbed (Deng et al., arXiv 2502.11401): embeddings that follow the autoregressive nature of an LLM.

* **Stage 1, information compression.** ``k`` compression tokens (trainable input embeddings, like new
  vocabulary rows) are appended to ``context \\n instruction \\n``; the trainable encoder's final (post-norm)
  states at those ``k`` positions are prepended, as input embeddings and without projection, to the
  target's token embeddings and fed to a **frozen copy of the original backbone**, which must reproduce
  ``target + EOS`` (cross-entropy on the target tokens only).
* **Stage 2, conditional distribution alignment.** Encoder initialised from stage 1, decoder = the frozen
  original backbone. With ``a = log p(d+|e_q)``, ``b = log p(d-|e_q)``, ``c = log p(d+|e_d+)`` (summed
  log-probabilities of a target given a compression memory) and reference scores from the stage-1
  model (computed once, before training, and cached in the run folder)::

      S1 = -f(beta * |a - c|)
      S2 = -f(beta * [(a - ref_a) - (b - ref_b)])      (paper; the official code adds the reference
                                                       difference: (a - b) + (ref_a - ref_b))
      loss = -log( e^{S1/tau} / (e^{S1/tau} + sum e^{S2/tau}) )

  ``f`` = sigmoid (paper), tanh or log-sigmoid; S1's distance can be replaced by the KL or JS divergence of
  the decoder's next-token distributions along ``d+`` (the paper's loss variants); ``strategy`` 1–4 are the
  appendix's alternative alignment strategies (see :func:`alignment_scores`).
* **Inference**: the mean of the ``k`` compression-token states, L2-normalised (cosine = inner product).

Both stages train through :func:`repro.training.contrastive.run_training` (accelerate, checkpoints, resume): one loop for
every objective of the project.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import shutil
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable, ClassVar, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from repro.store.atomic import atomic_path, write_json
from repro.core.backbones import load_backbone
from repro.core.encode import EncodeConfig, Tokenizer, _batches, _eos_id, _pad_id
from repro.store.fingerprint import weights_digest
from repro.store.paths import data_dir
from repro.core.prompts import get_prompt
from repro.training.contrastive import (LORA_TARGETS, batch_indices, config_identity, make_accelerator, pad_right, read_triplets,
                         run_training, subset, validation_sts)

INSTRUCTION_FILES = (
    "train/instruction/t0_train_50k_one_template_per_dataset.jsonl",
    "train/instruction/self_instruct_seed_tasks.jsonl",
    "train/instruction/self_instruct_user_oriented_instructions.jsonl",
)
ALIGN_DATA = {"nli": "nli", "medi-nli": "medi-nli"}
# stage 1: "instruction" = context + instruction -> the answer (T0, self-instruct); "autoencode" = a Wikipedia
# paragraph -> its own first tokens (ICAE-style autoencoding: the memory must carry the text itself)
STAGE1_DATA = ("instruction", "autoencode")
AUTOENCODE_FILE = "train/unsup_text/wikitext2_raw_test_paragraphs.jsonl"
FINETUNE = ("full", "lora")
SQUASH = ("sigmoid", "tanh", "logsigmoid")
DIVERGENCE = ("logprob", "kl", "js")
REFERENCE_SIGN = ("paper", "code")
NEXT_INSTRUCTION = 'This sentence means in one word: "'  # the paper's I_next = I_self for symmetric tasks
QUERY_PROMPT = "autoregembed-instruction"  # "{text}\n{instruction}" (+ the encoder's newline)
PASSAGE_PROMPT = "autoregembed-passage"  # retrieval documents at inference


@dataclass
class StageConfig:
    """What both stages share: the encoder, its optimisation, and the run's bookkeeping."""

    backbone: str = "smollm2-135m"
    finetune: str = "full"  # "full" (the paper) or "lora" (peft, r/alpha/dropout below)
    compression_tokens: int = 5
    steps: int = 100
    batch_size: int = 8
    lr: float = 2e-5
    warmup_steps: int = 10
    weight_decay: float = 0.0
    schedule: str = "cosine"
    max_length: int = 64  # encoder input tokens, compression tokens excluded
    target_max_length: int = 48
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    seed: int = 0
    eval_every: int = 50
    checkpoint_every: int = 50
    max_grad_norm: float | None = 1.0  # clip the global gradient norm (the transformers Trainer's default); None: off

    def __post_init__(self):
        _check_common(self)


@dataclass
class CompressConfig(StageConfig):
    """Stage 1 (information compression) of one encoder (the official code: lr 1e-5, cosine, one epoch of a 7B
    model; a 135M model in a few hundred steps needs more: see scripts/p3_stage1_lr_probe.py)."""

    ADDED_LATER: ClassVar[tuple[str, ...]] = ("data",)

    steps: int = 200
    lr: float = 1e-4
    max_length: int = 160  # context + instruction
    validation_examples: int = 64
    data: str = "instruction"  # STAGE1_DATA: the instruction sets (the issue's) or autoencoding Wikipedia paragraphs

    def __post_init__(self):
        _check_common(self)
        if self.data not in STAGE1_DATA:
            raise ValueError(f"unknown stage-1 data '{self.data}'; valid: {', '.join(STAGE1_DATA)}")


@dataclass
class AlignConfig(StageConfig):
    """Stage 2 (conditional distribution alignment); ``compress=None`` starts from the raw backbone with
    fresh compression tokens (the "remove compression" ablation)."""

    compress: CompressConfig | None = field(default_factory=CompressConfig)
    lr: float = 5e-6  # the official code's; at 2e-5 our stage 2 diverged (rising loss, STS-B dev 68 -> 47 in 50 steps)
    data: str = "nli"
    train_examples: int = 0  # 0 = every training triplet; n = a seeded subset of n triplets (data efficiency)
    validation_triplets: int = 300
    validation_sts_pairs: int = 300
    beta: float = 0.1
    temperature: float = 0.05  # the paper; the official code uses 0.1
    squash: str = "sigmoid"
    divergence: str = "logprob"
    reference_sign: str = "paper"
    strategy: int = 0  # 0 = the paper's loss; 1..4 = the appendix's alternatives
    anchor_weight: float = 0.5  # strategy 2: weight of the d+ anchor (1 - weight on the q anchor)
    instruction: str = NEXT_INSTRUCTION

    def __post_init__(self):
        if isinstance(self.compress, dict):
            self.compress = CompressConfig(**self.compress)
        _check_common(self)
        if self.compress is not None:
            for name in ("backbone", "finetune", "compression_tokens"):
                if getattr(self.compress, name) != getattr(self, name):
                    raise ValueError(f"stage 2 {name}={getattr(self, name)!r} differs from stage 1's "
                                     f"{getattr(self.compress, name)!r}")
        if self.data not in ALIGN_DATA:
            raise ValueError(f"unknown alignment data '{self.data}'; valid: {', '.join(ALIGN_DATA)}")
        for name, valid in (("squash", SQUASH), ("divergence", DIVERGENCE), ("reference_sign", REFERENCE_SIGN)):
            if getattr(self, name) not in valid:
                raise ValueError(f"unknown {name} '{getattr(self, name)}'; valid: {', '.join(valid)}")
        if self.strategy not in (0, 1, 2, 3, 4):
            raise ValueError(f"strategy must be 0 (the paper's loss) or 1..4, got {self.strategy!r}")
        if not (isinstance(self.train_examples, int) and self.train_examples >= 0):
            raise ValueError(f"train_examples must be an integer >= 0 (0 = all), got {self.train_examples!r}")
        if not self.temperature > 0 or not self.beta > 0 or not 0 <= self.anchor_weight <= 1:
            raise ValueError("temperature and beta must be positive and anchor_weight in [0, 1]")


def _check_common(config) -> None:
    if config.finetune not in FINETUNE:
        raise ValueError(f"unknown finetune '{config.finetune}'; valid: {', '.join(FINETUNE)}")
    for name in ("compression_tokens", "steps", "batch_size", "max_length", "target_max_length", "eval_every",
                 "checkpoint_every", "lora_r"):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not config.lr > 0:
        raise ValueError("lr must be positive")
    if config.max_grad_norm is not None and not config.max_grad_norm > 0:
        raise ValueError(f"max_grad_norm must be positive or None (no clipping), got {config.max_grad_norm!r}")


# ----------------------------------------------------------------------------------------------- data

def read_instructions() -> list[dict]:
    """Stage-1 examples ``{context, instruction, output}`` from the data folder's instruction sets (T0
    prompts carry their instruction inside the prompt, so their ``instruction`` is empty)."""
    rows = []
    for rel in INSTRUCTION_FILES:
        path = data_dir() / rel
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found")
        with open(path) as handle:  # not splitlines(): texts contain U+2028 and friends
            items = [json.loads(line) for line in handle if line.strip()]
        for item in items:
            if "prompt" in item:
                rows.append({"context": item["prompt"], "instruction": "", "output": item["completion"]})
            else:
                for instance in item["instances"]:
                    rows.append({"context": instance["input"], "instruction": item["instruction"],
                                 "output": instance["output"]})
    rows = [r for r in rows if r["output"].strip()]
    random.Random(0).shuffle(rows)
    return rows


def read_stage1(data: str = "instruction") -> list[dict]:
    """Stage-1 examples ``{context, instruction, output}`` of ``data`` (:data:`STAGE1_DATA`), shuffled with a
    fixed seed (the first ``validation_examples`` are held out)."""
    if data == "instruction":
        return read_instructions()
    if data != "autoencode":
        raise ValueError(f"unknown stage-1 data '{data}'; valid: {', '.join(STAGE1_DATA)}")
    path = data_dir() / AUTOENCODE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    with open(path) as handle:
        texts = [json.loads(line)["text"] for line in handle if line.strip()]
    rows = [{"context": t, "instruction": "", "output": t} for t in texts if t.strip()]
    random.Random(0).shuffle(rows)
    return rows


def read_align_triplets(name: str) -> list[dict]:
    if name == "nli":
        return read_triplets("nli")
    path = data_dir() / "train/medi_nli/medi_nli.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    with open(path) as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [{"query": r["anchor"], "positive": r["positive"], "negative": r["negative"]} for r in rows]


def split_align(config: AlignConfig) -> tuple[list[dict], list[dict]]:
    """Training triplets (a seeded subset of ``train_examples`` if set) and held-out triplets (by anchor)."""
    from repro.training.contrastive import TrainConfig, split_triplets

    if config.data == "nli":
        train_rows, held = split_triplets(TrainConfig(validation_triplets=config.validation_triplets,
                                                      seed=config.seed))
    else:
        rows = read_align_triplets(config.data)
        cut = min(config.validation_triplets, len(rows) // 5)
        held, train_rows = rows[:cut], rows[cut:]
    train_rows = subset(train_rows, config.train_examples, config.seed)
    return train_rows, held


# ---------------------------------------------------------------------------------------------- model

class TextIds:
    """Encoder inputs ``render(text) + "\\n"`` (prompt-aware truncation of :mod:`repro.core.encode`) and targets
    ``text + EOS``, as lists of token ids."""

    def __init__(self, tokenizer, max_length: int, target_max_length: int):
        self.tok = tokenizer
        self.max_length, self.target_max_length = max_length, target_max_length
        self.newline = tokenizer("\n", add_special_tokens=False).input_ids
        self.eos = _eos_id(tokenizer)
        self.pad = _pad_id(tokenizer)
        self._tokenizers: dict[str, Tokenizer] = {}

    def encoder(self, text: str, prompt: str = "none-noeos", instruction: str = "") -> list[int]:
        """Token ids of ``prompt`` rendered with ``text`` (and ``instruction``), then a newline."""
        key = f"{prompt}\0{instruction}"
        if key not in self._tokenizers:
            config = EncodeConfig(prompt=prompt, max_length=self.max_length - len(self.newline),
                                  truncation="head_tail", instruction=instruction)
            self._tokenizers[key] = Tokenizer(self.tok, get_prompt(prompt), config)
        return self._tokenizers[key](text).ids + self.newline

    def target(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"texts must be str, got {type(text).__name__}")
        ids = self.tok(text, add_special_tokens=False).input_ids[:self.target_max_length - 1]
        return ids + [self.eos]

    def pad_batch(self, items: Sequence[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        return pad_right(items, self.pad)


def query_text(text: str, instruction: str) -> str:
    """``context \\n instruction`` (the encoder adds the final newline)."""
    return f"{text}\n{instruction}" if instruction else text


class AutoRegModel(nn.Module):
    """Trainable encoder (full or LoRA) + compression-token embeddings + the frozen original decoder."""

    def __init__(self, backbone, finetune: str, compression_tokens: int, decoder: nn.Module | None):
        super().__init__()
        self.backbone_ref = [backbone]
        self.lm = backbone.model
        self.finetune = finetune
        self.decoder_ref = [decoder]  # frozen copy (full fine-tuning); None = the LoRA model, adapters off
        table = self.lm.get_input_embeddings().weight.detach()
        generator = torch.Generator().manual_seed(0)
        start = table.mean(0, keepdim=True) + 1e-3 * table.std(0, keepdim=True) * torch.randn(
            compression_tokens, table.shape[1], generator=generator)
        self.compression = nn.Parameter(start.to(table.device))

    @property
    def backbone(self):
        return self.backbone_ref[0]

    @property
    def k(self) -> int:
        return int(self.compression.shape[0])

    def memory(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``[B, k, d]``: the encoder's final states at the compression positions after each text."""
        embed = self.lm.get_input_embeddings()
        batch, width = ids.shape
        lengths = mask.sum(1)
        inputs = torch.cat([embed(ids), torch.zeros(batch, self.k, embed.embedding_dim, device=ids.device)], 1)
        rows = torch.arange(batch, device=ids.device)[:, None]
        cols = lengths[:, None] + torch.arange(self.k, device=ids.device)[None]
        inputs = inputs.index_put((rows, cols), self.compression.unsqueeze(0).expand(batch, -1, -1))
        full_mask = (torch.arange(width + self.k, device=ids.device)[None] < (lengths + self.k)[:, None]).long()
        out = self.lm.get_decoder()(inputs_embeds=inputs, attention_mask=full_mask, use_cache=False)
        return out.last_hidden_state[rows, cols]

    def embed(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The inference embedding: mean of the compression states, L2-normalised."""
        return F.normalize(self.memory(ids, mask).mean(1), dim=-1)

    def _decoder_call(self, fn):
        decoder = self.decoder_ref[0]
        if decoder is not None:
            return fn(decoder)
        with self.lm.disable_adapter():
            return fn(self.lm)

    def target_log_probs(self, memory: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor,
                         full: bool = False) -> torch.Tensor:
        """Summed log p(target | memory) per row (``full``: the ``[B, T, V]`` next-token log-distributions)."""
        k, width = memory.shape[1], ids.shape[1]

        def run(lm):
            inputs = torch.cat([memory, lm.get_input_embeddings()(ids)], 1)
            attention = torch.cat([torch.ones(ids.shape[0], k, dtype=mask.dtype, device=ids.device), mask], 1)
            hidden = lm.get_decoder()(inputs_embeds=inputs, attention_mask=attention, use_cache=False)
            # the state at position k-1+t predicts target token t; lm_head only on those positions
            return lm.get_output_embeddings()(hidden.last_hidden_state[:, k - 1:k - 1 + width]).float()

        log_probs = torch.log_softmax(self._decoder_call(run), dim=-1)
        if full:
            return log_probs
        picked = log_probs.gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        return (picked * mask).sum(1)

    def forward(self, batch: dict) -> torch.Tensor:
        return OBJECTIVES[batch["objective"]](self, batch)


def build_autoreg(config, device: str | None = None) -> AutoRegModel:
    """Encoder (the backbone, full or LoRA), a frozen copy of the original as decoder, compression tokens."""
    torch.manual_seed(config.seed)
    backbone = load_backbone(config.backbone, device=device)
    quantizer = getattr(backbone.model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(backbone.model)
    decoder = None
    if config.finetune == "full":
        decoder = copy.deepcopy(backbone.model).eval()
        for p in decoder.parameters():
            p.requires_grad_(False)
        for p in backbone.model.parameters():
            p.requires_grad_(True)
        backbone.model.get_output_embeddings().weight.requires_grad_(False)  # lm_head is never used by the encoder
        if backbone.model.get_output_embeddings().weight is backbone.model.get_input_embeddings().weight:
            backbone.model.get_input_embeddings().weight.requires_grad_(True)  # tied: the encoder uses it
    else:
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                          target_modules=list(LORA_TARGETS), bias="none")
        backbone.model = get_peft_model(backbone.model, lora)
    model = AutoRegModel(backbone, config.finetune, config.compression_tokens, decoder)
    return model.to(next(backbone.model.parameters()).device)


# ------------------------------------------------------------------------------------------ objectives

def compression_loss(model: AutoRegModel, batch: dict) -> torch.Tensor:
    """Stage 1: token-mean cross-entropy of the frozen decoder reproducing the target from the memory."""
    memory = model.memory(batch["ids"], batch["mask"])
    total = model.target_log_probs(memory, batch["target_ids"], batch["target_mask"])
    return -total.sum() / batch["target_mask"].sum()


def squash(x: torch.Tensor, how: str) -> torch.Tensor:
    return {"sigmoid": torch.sigmoid, "tanh": torch.tanh, "logsigmoid": F.logsigmoid}[how](x)


def divergence(p_log: torch.Tensor, q_log: torch.Tensor, mask: torch.Tensor, how: str) -> torch.Tensor:
    """Summed over target positions: KL(p || q) or JS(p, q) of next-token distributions (log inputs)."""
    if how == "kl":
        per = (p_log.exp() * (p_log - q_log)).sum(-1)
    else:
        m_log = torch.logaddexp(p_log, q_log) - np.log(2.0)
        per = 0.5 * (p_log.exp() * (p_log - m_log)).sum(-1) + 0.5 * (q_log.exp() * (q_log - m_log)).sum(-1)
    return (per * mask).sum(1)


# (target, source) log-probabilities each strategy needs; "q", "p", "n" = query, positive, negative
STRATEGY_TERMS = {
    0: [("p", "q"), ("n", "q"), ("p", "p")],
    1: [("q", "q"), ("q", "p"), ("q", "n")],
    2: [("p", "q"), ("n", "q"), ("p", "p"), ("q", "q"), ("q", "p")],
    3: [("p", "q"), ("n", "q"), ("p", "p"), ("n", "p")],
    4: [("p", "q"), ("n", "q"), ("p", "p"), ("n", "n"), ("p", "n")],
}


def reference_terms(strategy: int) -> list[tuple[str, str]]:
    """The (target, source) pairs whose reference log-probabilities S2 subtracts."""
    return {0: [("p", "q"), ("n", "q")], 1: [("q", "p"), ("q", "n")], 2: [("p", "q"), ("n", "q")],
            3: [("p", "q"), ("n", "q"), ("p", "p"), ("n", "p")],
            4: [("p", "q"), ("n", "q"), ("n", "n"), ("p", "n")]}[strategy]


def alignment_scores(lp: dict, ref: dict, config: AlignConfig, dist: Callable[[str, str, str], torch.Tensor]
                     ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """S1 (``[B]``) and the list of S2 terms (each ``[B]``) of the configured strategy.

    ``lp[(target, source)]`` = summed log p(target | e_source); ``ref`` the same for the reference model;
    ``dist(target, source_a, source_b)`` = the KL/JS divergence variant of S1's distance.

    * 0 (the paper): anchor d+; S1 compares p(d+|e_q) with p(d+|e_d+); S2 = log-odds of d+ over d- given e_q.
    * 1: the query is the generation target: S1 compares p(q|e_q) with p(q|e_d+); S2 = log-odds of
      p(q|e_d+) over p(q|e_d-).
    * 2: both q and d+ as anchors: S1 = w * S1(d+) + (1 - w) * S1(q).
    * 3: an extra S2 term raising p(d+|e_d+) while lowering p(d-|e_d+).
    * 4: an extra S2 term raising p(d-|e_d-) while lowering p(d+|e_d-).
    """
    f, beta = config.squash, config.beta

    def s1(target: str, a: str, b: str) -> torch.Tensor:
        distance = (lp[(target, a)] - lp[(target, b)]).abs() if config.divergence == "logprob" \
            else dist(target, a, b)
        return -squash(beta * distance, f)

    def s2(better: tuple, worse: tuple) -> torch.Tensor:
        if config.reference_sign == "paper":
            margin = (lp[better] - ref[better]) - (lp[worse] - ref[worse])
        else:  # the official code: (chosen - rejected) + (ref_chosen - ref_rejected)
            margin = (lp[better] - lp[worse]) + (ref[better] - ref[worse])
        return -squash(beta * margin, f)

    if config.strategy == 1:
        return s1("q", "q", "p"), [s2(("q", "p"), ("q", "n"))]
    first = s1("p", "q", "p")
    negatives = [s2(("p", "q"), ("n", "q"))]
    if config.strategy == 2:
        first = config.anchor_weight * first + (1 - config.anchor_weight) * s1("q", "q", "p")
    elif config.strategy == 3:
        negatives.append(s2(("p", "p"), ("n", "p")))
    elif config.strategy == 4:
        negatives.append(s2(("n", "n"), ("p", "n")))
    return first, negatives


def alignment_loss_from_scores(s1: torch.Tensor, s2: list[torch.Tensor], temperature: float) -> torch.Tensor:
    """-log e^{S1/tau} / (e^{S1/tau} + sum_j e^{S2_j/tau}), averaged over the batch (B comparisons, not B^2)."""
    logits = torch.stack([s1, *s2], dim=1) / temperature
    return (torch.logsumexp(logits, dim=1) - logits[:, 0]).mean()


def alignment_loss(model: AutoRegModel, batch: dict) -> torch.Tensor:
    """Stage 2 on this process's triplets (see :func:`alignment_scores`)."""
    config: AlignConfig = batch["config"]
    memories = {s: model.memory(*batch["inputs"][s]) for s in batch["sources"]}
    lp, full = {}, {}
    for target, source in STRATEGY_TERMS[config.strategy]:
        ids, mask = batch["targets"][target]
        if config.divergence == "logprob":
            lp[(target, source)] = model.target_log_probs(memories[source], ids, mask)
        else:
            full[(target, source)] = model.target_log_probs(memories[source], ids, mask, full=True)
            lp[(target, source)] = (full[(target, source)].gather(-1, ids.unsqueeze(-1)).squeeze(-1) * mask).sum(1)

    def dist(target, a, b):
        return divergence(full[(target, a)], full[(target, b)], batch["targets"][target][1], config.divergence)

    s1, s2 = alignment_scores(lp, batch["reference"], config, dist)
    return alignment_loss_from_scores(s1, s2, config.temperature)


OBJECTIVES = {"compress": compression_loss, "align": alignment_loss}


# ------------------------------------------------------------------------------------------- batches

def sources_of(strategy: int) -> list[str]:
    return sorted({s for _, s in STRATEGY_TERMS[strategy]})


def align_batch(texts: TextIds, rows: list[dict], config: AlignConfig, device) -> dict:
    """Tensors for :func:`alignment_loss` (everything except the reference scores)."""
    names = {"q": "query", "p": "positive", "n": "negative"}
    sources = sources_of(config.strategy)
    targets_needed = sorted({t for t, _ in STRATEGY_TERMS[config.strategy]})
    inputs = {s: [t.to(device) for t in texts.pad_batch(
        [texts.encoder(r[names[s]], QUERY_PROMPT, config.instruction) for r in rows])] for s in sources}
    targets = {t: [x.to(device) for x in texts.pad_batch([texts.target(r[names[t]]) for r in rows])]
               for t in targets_needed}
    tokens = sum(int(m.sum()) for _, m in inputs.values()) + sum(int(m.sum()) for _, m in targets.values())
    return {"objective": "align", "config": config, "sources": sources, "inputs": inputs, "targets": targets,
            "tokens": tokens}


@torch.no_grad()
def reference_scores(model: AutoRegModel, texts: TextIds, rows: list[dict], config: AlignConfig,
                     batch_size: int = 16) -> dict[tuple[str, str], torch.Tensor]:
    """Reference log-probabilities (the initial = stage-1 model) of the strategy's S2 terms, per row."""
    was = model.training
    model.eval()
    terms = reference_terms(config.strategy)
    out = {term: torch.zeros(len(rows)) for term in terms}
    device = model.compression.device
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        batch = align_batch(texts, chunk, config, device)
        memories = {s: model.memory(*batch["inputs"][s]) for s in {s for _, s in terms}}
        for target, source in terms:
            out[(target, source)][start:start + len(chunk)] = model.target_log_probs(
                memories[source], *batch["targets"][target]).cpu()
    model.train(was)
    return out


def seen_indices(n: int, config) -> list[int]:
    """Every training row the run's ``steps`` will draw (batches are a function of seed and step)."""
    seen = set()
    for step in range(config.steps):
        seen.update(batch_indices(n, config.batch_size, step, config.seed))
    return sorted(seen)


# ---------------------------------------------------------------------------------------------- training

def _load_encoder_weights(model: AutoRegModel, folder: Path) -> None:
    state = torch.load(folder / "encoder.pt", map_location="cpu")
    with torch.no_grad():
        params = dict(model.named_parameters())
        for name, value in state.items():
            params[name].copy_(value)


def save_encoder(model: AutoRegModel, config, folder: Path) -> None:
    """The trainable weights (whole encoder or LoRA + compression tokens) and the config."""
    folder.mkdir(parents=True, exist_ok=True)
    state = {n: p.detach().cpu() for n, p in model.named_parameters() if p.requires_grad}
    with atomic_path(folder / "encoder.pt") as tmp:
        torch.save(state, tmp)
    write_json(folder / "config.json", {"stage": "align" if isinstance(config, AlignConfig) else "compress",
                                        "config": asdict(config)})


def load_encoder(folder: str | Path, device: str | None = None) -> tuple[AutoRegModel, CompressConfig | AlignConfig]:
    """Rebuild a trained encoder saved by :func:`save_encoder` (same build path as training)."""
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"{folder} is not a saved AutoRegEmbed encoder (no config.json)")
    saved = json.loads((folder / "config.json").read_text())
    cls = AlignConfig if saved["stage"] == "align" else CompressConfig
    config = cls(**{f.name: saved["config"][f.name] for f in fields(cls) if f.name in saved["config"]})
    model = build_autoreg(config, device=device)
    _load_encoder_weights(model, folder)
    model.eval()
    return model, config


def validation_reconstruction(model: AutoRegModel, texts: TextIds, rows: list[dict], informative: bool = True) -> float:
    """Held-out stage-1 loss (token-mean cross-entropy), no gradients. ``informative=False``: the decoder gets
    the same memory for every text (the k compression-token embeddings themselves), the loss a memory that
    carries no information about the text reaches; a stage 1 that compresses goes below it."""
    was = model.training
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(rows), 16):
            batch = compress_batch(texts, rows[start:start + 16], model.compression.device)
            memory = (model.memory(batch["ids"], batch["mask"]) if informative
                      else model.compression.unsqueeze(0).expand(batch["ids"].shape[0], -1, -1))
            total -= float(model.target_log_probs(memory, batch["target_ids"], batch["target_mask"]).sum())
            count += int(batch["target_mask"].sum())
    model.train(was)
    return total / max(count, 1)


def compress_batch(texts: TextIds, rows: list[dict], device) -> dict:
    ids, mask = texts.pad_batch([texts.encoder(query_text(r["context"], r["instruction"])) for r in rows])
    t_ids, t_mask = texts.pad_batch([texts.target(r["output"]) for r in rows])
    return {"objective": "compress", "ids": ids.to(device), "mask": mask.to(device), "target_ids": t_ids.to(device),
            "target_mask": t_mask.to(device), "tokens": int(mask.sum() + t_mask.sum())}


def train_compression(config: CompressConfig, output: str | Path, progress: bool = True) -> dict:
    """Stage 1 (or resume it); the encoder is saved in ``output/final``."""
    output = Path(output)
    accelerator = make_accelerator()
    model = build_autoreg(config, device=str(accelerator.device))
    texts = TextIds(model.backbone.tokenizer, config.max_length, config.target_max_length)
    rows = read_stage1(config.data)
    held, train_rows = rows[:config.validation_examples], rows[config.validation_examples:]
    _check_divisible(config.batch_size, accelerator.num_processes)

    def step_loss(wrapped, step, rank, world):
        local = config.batch_size // world
        chosen = [train_rows[i] for i in batch_indices(len(train_rows), config.batch_size, step, config.seed)]
        batch = compress_batch(texts, chosen[rank * local:(rank + 1) * local], accelerator.device)
        return wrapped(batch), batch["tokens"], config.batch_size

    def evaluate(core):
        return {"validation_loss": validation_reconstruction(core, texts, held)}

    run = run_training(accelerator, model, config, output, step_loss, evaluate, "AutoRegEmbed compression",
                       progress)
    return _finish(accelerator, model, config, output, run)


def train_alignment(config: AlignConfig, output: str | Path, compressed: str | Path | None,
                    progress: bool = True) -> dict:
    """Stage 2 from the stage-1 encoder in ``compressed`` (None: the raw backbone); saved in ``output/final``."""
    output = Path(output)
    accelerator = make_accelerator()
    model = build_autoreg(config, device=str(accelerator.device))
    if compressed is not None:
        _load_encoder_weights(model, Path(compressed))
    # which stage-1 weights this run starts from (CPU training is not bit-reproducible across machines, so a
    # stage 1 retrained elsewhere is another starting point; the pages report it)
    initial_digest = encoder_digest(model)
    texts = TextIds(model.backbone.tokenizer, config.max_length, config.target_max_length)
    train_rows, held = split_align(config)
    _check_divisible(config.batch_size, accelerator.num_processes)

    reference_file = output / "reference.pt"  # from the initial model: computed once, before any step
    if reference_file.is_file():
        reference = torch.load(reference_file)
    else:
        seen = seen_indices(len(train_rows), config)
        scores = reference_scores(model, texts, [train_rows[i] for i in seen], config)
        reference = {"config": config_identity(config), "index": seen, "scores": scores,
                     "initial_digest": initial_digest}
        if accelerator.is_main_process:
            output.mkdir(parents=True, exist_ok=True)
            with atomic_path(reference_file) as tmp:
                torch.save(reference, tmp)
    if reference["config"] != config_identity(config):
        raise ValueError(f"{reference_file} belongs to another configuration; use a new output folder")
    if reference.get("initial_digest", initial_digest) != initial_digest:  # (files of before the digest: unchecked)
        raise ValueError(f"{reference_file} was computed from other stage-1 weights (sha256 "
                         f"{reference['initial_digest']}, now {initial_digest}): stage 1 was retrained; delete "
                         f"{output} to start this run again from the current stage 1")
    position = {row: i for i, row in enumerate(reference["index"])}

    def step_loss(wrapped, step, rank, world):
        local = config.batch_size // world
        chosen = batch_indices(len(train_rows), config.batch_size, step, config.seed)[rank * local:(rank + 1) * local]
        batch = align_batch(texts, [train_rows[i] for i in chosen], config, accelerator.device)
        where = torch.tensor([position[i] for i in chosen])
        batch["reference"] = {term: values[where].to(accelerator.device)
                              for term, values in reference["scores"].items()}
        return wrapped(batch), batch["tokens"], config.batch_size

    def embed(core):
        return lambda items: embed_texts(core, texts, items, QUERY_PROMPT, config.instruction)

    def evaluate(core):
        return {"validation_sts": validation_sts(embed(core), config.validation_sts_pairs, config.seed)}

    run = run_training(accelerator, model, config, output, step_loss, evaluate, "AutoRegEmbed alignment", progress)
    return _finish(accelerator, model, config, output, run | {"initial_digest": initial_digest})


def encoder_digest(model: AutoRegModel) -> str:
    """sha256 (16 hex digits) of the trainable weights: encoder + compression tokens."""
    return weights_digest(model, lambda _, param: param.requires_grad)


def _check_divisible(batch_size: int, world: int) -> None:
    if batch_size % world:
        raise ValueError(f"batch size {batch_size} is not divisible by {world} processes")


def _finish(accelerator, model, config, output: Path, run: dict) -> dict:
    core: AutoRegModel = accelerator.unwrap_model(model)
    summary = {"config": asdict(config),
               "trainable_parameters": sum(p.numel() for p in core.parameters() if p.requires_grad), **run}
    if accelerator.is_main_process:
        save_encoder(core, config, output / "final")
        write_json(output / "summary.json", summary)
        # the run is done (summary.json ends its training for good): its resume checkpoint, with the optimizer
        # state of a fully fine-tuned encoder (~1.6 GB for a 135M backbone), only fills the disk
        shutil.rmtree(output / "checkpoint", ignore_errors=True)
    accelerator.wait_for_everyone()
    return summary


# --------------------------------------------------------------------------------------------- inference

def embed_texts(model: AutoRegModel, texts: TextIds, items: list[str], prompt: str = QUERY_PROMPT,
                instruction: str = NEXT_INSTRUCTION, batch_tokens: int = 4096, max_batch: int = 64) -> np.ndarray:
    """Inference embeddings of ``items`` rendered with ``prompt`` (length-sorted batches, no gradients)."""
    dim = model.backbone.hidden_size
    if not items:
        return np.zeros((0, dim), dtype=np.float32)
    ids = [texts.encoder(t, prompt, instruction) for t in items]
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    out = np.zeros((len(ids), dim), dtype=np.float32)
    was = model.training
    model.eval()
    with torch.no_grad():
        for positions in _batches([len(ids[i]) for i in order], batch_tokens, max_batch):
            group = [order[p] for p in positions]
            tensor, mask = texts.pad_batch([ids[i] for i in group])
            device = model.compression.device
            out[group] = model.embed(tensor.to(device), mask.to(device)).float().cpu().numpy()
    model.train(was)
    return out
