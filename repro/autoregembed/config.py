"""AutoRegEmbed's settings: stage 1 (:class:`CompressConfig`) and stage 2 (:class:`AlignConfig`), checked on construction."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

from repro.core.prompts import get_prompt
from repro.store.identity import config_from_identity
from repro.training import budget
from repro.training.loop import LoopSettings

INSTRUCTION_FILES = (
    "train/instruction/t0_train_50k_one_template_per_dataset.jsonl",
    "train/instruction/self_instruct_seed_tasks.jsonl",
    "train/instruction/self_instruct_user_oriented_instructions.jsonl",
)
# stage-2 triplets: SNLI (the earlier runs), MEDI's NLI triplets, or both (the declared Paper 3 mix under the
# budget rule, the same for its contrastive baselines: repro.training.data.DATASETS["nli-medi"])
ALIGN_DATA = ("nli", "medi-nli", "nli-medi")
# stage 1: "instruction" = context + instruction -> the answer (T0, self-instruct); "autoencode" = a Wikipedia
# paragraph -> its own first tokens (ICAE-style autoencoding: the memory must carry the text itself)
STAGE1_DATA = ("instruction", "autoencode")
AUTOENCODE_FILE = "train/unsup_text/wikitext2_raw_test_paragraphs.jsonl"
FINETUNE = ("full", "lora")
SQUASH = ("sigmoid", "tanh", "logsigmoid")
DIVERGENCE = ("logprob", "kl", "js")
REFERENCE_SIGN = ("paper", "code")
NEXT_INSTRUCTION = 'This sentence means in one word: "'  # the paper's I_next = I_self (the book's earlier runs)
# the official code's instruction (training and inference) ends with a curly opening quote, U+201C
OFFICIAL_INSTRUCTION = "This sentence means in one word: \u201c"
QUERY_PROMPT = "autoregembed-instruction"  # "{text}\n{instruction}" (+ the encoder's newline)
PASSAGE_PROMPT = "autoregembed-passage"  # retrieval documents at inference
OFFICIAL_PASSAGE_PROMPT = "autoregembed-passage-official"
# How the encoder's inputs are written (repro.autoregembed.model.TextIds):
# * "official" (new runs): the official code's form. Training inputs are [BOS] + tok(text + "\n") + tok(instruction +
#   "\n"), each piece tokenized on its own, the text cut on the right (data.py:85-90 of both stages); BOS always,
#   the tokenizer's own or, where it has none, its EOS. Stage 2's instruction ends with a curly quote (U+201C,
#   run_condition_distribution_alignment.py:97). At inference the filled template is tokenized in one call, BOS in
#   front, cut on the right at the inference length, with no newline before the compression tokens
#   (eval_autoregembed.py:236-243, :290, :312); documents get the curly-quote passage prompt.
# * "book": the book's earlier runs (every run stored before this setting existed): a straight quote, prompt-aware
#   tokenization that keeps the text's head and tail, BOS only where the tokenizer adds one, and the training
#   newline before the compression tokens at inference too.
TEMPLATES = ("official", "book")
# Where the official template cuts a training input longer than ``max_length``: "right" (the official code's cut; its
# 4,096-token context limit rarely cuts, ours of 160 cuts a third of stage 1's inputs, dropping the question T0's
# prompts put last) or "head_tail" (keep the head and the tail, as the book's template does). "" = the template's own.
CUTS = ("right", "head_tail")
# Whether the encoder's input starts with BOS: "always" (the official code: the tokenizer's BOS, or its EOS where it has
# none; SmolLM2's is its chat token <|im_start|>) or "tokenizer" (only where the tokenizer adds one itself, as the
# book's template: SmolLM2's adds none). "" = the template's own. Training and inference alike.
BOS_RULES = ("always", "tokenizer")
TEMPLATE_SETTINGS = {  # stage 2's instruction and inference settings under each template
    "official": {"instruction": OFFICIAL_INSTRUCTION, "inference_newline": False,
                 "passage_prompt": OFFICIAL_PASSAGE_PROMPT},
    "book": {"instruction": NEXT_INSTRUCTION, "inference_newline": True, "passage_prompt": PASSAGE_PROMPT},
}


@dataclass
class StageConfig(LoopSettings):
    """What both stages share: the encoder, its optimisation, and the run's bookkeeping (LoRA sizes, seed,
    validation and checkpoint intervals from :class:`repro.training.loop.LoopSettings`)."""

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
    max_grad_norm: float | None = 1.0  # clip the global gradient norm (the transformers Trainer's default); None: off
    template: str = "official"  # TEMPLATES: how the encoder's inputs are written; "book" = the earlier runs
    cut: str = ""  # CUTS: where the official template cuts a long training input; "" = the template's own
    bos: str = ""  # BOS_RULES: whether the official template's inputs start with BOS; "" = the template's own (always)

    # the runs stored before `template` existed are the book's template (repro.store.identity.legacy_value)
    LEGACY: ClassVar[dict] = {"template": "book"}

    def __post_init__(self):
        _check_common(self)


@dataclass
class CompressConfig(StageConfig):
    """Stage 1 (information compression) of one encoder (the official code: lr 1e-5, cosine, one epoch of a 7B
    model; a 135M model in a few hundred steps needs more: see scripts/p3_stage1_lr_probe.py)."""

    ADDED_LATER: ClassVar[tuple[str, ...]] = ("data", "stopping", "accumulation", "template", "cut", "bos",
                                              "validation_sts_pairs", "stop_signal")

    steps: int = 200
    lr: float = 1e-4
    max_length: int = 160  # context + instruction
    validation_examples: int = 64
    # STS-B dev pairs of the compressed embedding at each evaluation (the budget rule's dev signal); 0 = none
    validation_sts_pairs: int = 0
    # what the budget rule (stopping="dev") stops and selects on: "validation_sts" (the rule's dev signal) or
    # "validation_loss" (the held-out reconstruction loss, stage 1's own objective: repro.training.budget)
    stop_signal: str = "validation_sts"
    data: str = "instruction"  # STAGE1_DATA: the instruction sets (T0 + self-instruct) or autoencoding Wikipedia paragraphs

    def __post_init__(self):
        _check_common(self)
        if self.data not in STAGE1_DATA:
            raise ValueError(f"unknown stage-1 data '{self.data}'; valid: {', '.join(STAGE1_DATA)}")
        if isinstance(self.validation_sts_pairs, bool) or not isinstance(self.validation_sts_pairs, int) \
                or self.validation_sts_pairs < 0:
            raise ValueError(f"validation_sts_pairs must be an integer >= 0, got {self.validation_sts_pairs!r}")
        if self.stop_signal not in budget.SIGNALS:
            raise ValueError(f"unknown stop_signal '{self.stop_signal}'; valid: {', '.join(budget.SIGNALS)}")
        if self.stopping == "dev" and self.stop_signal == budget.SIGNAL and not self.validation_sts_pairs:
            raise ValueError("stage 1 under the budget rule needs its dev signal: set validation_sts_pairs")


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
    instruction: str = ""  # stage 2's I_next; "" = the template's (TEMPLATE_SETTINGS)
    fused: bool = False  # True: one encoder and one decoder call per step (objectives.alignment_log_probs)
    stopping: str = "fixed"  # "fixed": train `steps`; "dev": the declared budget rule (repro.training.budget)
    # the book's template only: inference WITHOUT the trailing newline training appends before the compression tokens
    # (False, as the official evaluation), and the passage prompt of retrieval documents; None / "" = the template's
    inference_newline: bool | None = None
    passage_prompt: str = ""

    ADDED_LATER: ClassVar[tuple[str, ...]] = ("fused", "inference_newline", "passage_prompt", "stopping",
                                              "accumulation", "template", "cut", "bos")
    LEGACY: ClassVar[dict] = {"template": "book", "inference_newline": True, "passage_prompt": PASSAGE_PROMPT}

    def __post_init__(self):
        if isinstance(self.compress, dict):
            self.compress = config_from_identity(CompressConfig, self.compress)
        _check_common(self)
        for name, value in TEMPLATE_SETTINGS[self.template].items():  # the template's settings where left unset
            if getattr(self, name) in ("", None):
                setattr(self, name, value)
        if not isinstance(self.inference_newline, bool):
            raise ValueError(f"inference_newline must be true or false, got {self.inference_newline!r}")
        if self.template == "official" and (self.inference_newline or self.passage_prompt != OFFICIAL_PASSAGE_PROMPT):
            raise ValueError("the official template has its own inference (no newline, the curly-quote passage "
                             "prompt); inference_newline and passage_prompt apply to template='book'")
        if self.compress is not None:
            for name in ("backbone", "finetune", "compression_tokens", "template", "cut", "bos"):
                if getattr(self.compress, name) != getattr(self, name):
                    raise ValueError(f"stage 2 {name}={getattr(self, name)!r} differs from stage 1's "
                                     f"{getattr(self.compress, name)!r}")
        if self.data not in ALIGN_DATA:
            raise ValueError(f"unknown alignment data '{self.data}'; valid: {', '.join(ALIGN_DATA)}")
        get_prompt(self.passage_prompt)
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
    budget.check_settings(config)
    if config.template not in TEMPLATES:
        raise ValueError(f"unknown template '{config.template}'; valid: {', '.join(TEMPLATES)}")
    if config.cut not in ("", *CUTS):
        raise ValueError(f"unknown cut '{config.cut}'; valid: {', '.join(CUTS)} (or '' for the template's own)")
    if config.template == "book" and config.cut not in ("", "head_tail"):
        raise ValueError("the book's template always keeps the head and the tail; cut applies to template='official'")
    if config.bos not in ("", *BOS_RULES):
        raise ValueError(f"unknown bos '{config.bos}'; valid: {', '.join(BOS_RULES)} (or '' for the template's own)")
    if config.template == "book" and config.bos not in ("", "tokenizer"):
        raise ValueError("the book's template puts BOS only where the tokenizer adds one; bos applies to "
                         "template='official'")
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


def inference_settings(config: CompressConfig | AlignConfig) -> dict:
    """How a stage's encoder writes its inference inputs: stage 2's own instruction, newline and passage prompt,
    stage 1's those of its template (:data:`TEMPLATE_SETTINGS`)."""
    return {name: getattr(config, name, value) for name, value in TEMPLATE_SETTINGS[config.template].items()}


def stage_of(config: CompressConfig | AlignConfig) -> str:
    """``"compress"`` (stage 1) or ``"align"`` (stage 2)."""
    if isinstance(config, AlignConfig):
        return "align"
    if isinstance(config, CompressConfig):
        return "compress"
    raise TypeError(f"expected a CompressConfig or AlignConfig, got {type(config).__name__}")


def with_template(config: CompressConfig | AlignConfig, template: str):
    """``config`` with its inputs written under another template (both stages; stage 2's instruction and inference
    settings become the template's)."""
    if template not in TEMPLATES:
        raise ValueError(f"unknown template '{template}'; valid: {', '.join(TEMPLATES)}")
    if isinstance(config, CompressConfig):
        return replace(config, template=template)
    compress = None if config.compress is None else replace(config.compress, template=template)
    return replace(config, template=template, compress=compress, **TEMPLATE_SETTINGS[template])
