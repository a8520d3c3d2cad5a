"""Contrastive training of an embedding model: backbone + LoRA (peft) + optional trainable pooling head.

One trainer for every design (Tang & Yang's five models are :data:`repro.training.heads.MODELS`; AutoRegEmbed's
contrastive baselines reuse it). Built on accelerate, so the same code runs as one CPU process here and
as ``accelerate launch --num_processes N`` on GPUs or several CPU processes (gloo)::

    python -m repro.training.contrastive --model 5 --steps 200 --output runs/p1-model5
    accelerate launch --multi_gpu --num_processes 2 -m repro.training.contrastive --model 5 --steps 200 --output runs/p1-model5

(``--multi_gpu`` selects accelerate's torchrun launcher; without a GPU the processes run on CPU with gloo.
``--cpu`` would select its single-process launcher.)

Loss: InfoNCE over cosine similarity / temperature, in-batch negatives plus one hard negative per
query, over the GLOBAL batch (embeddings are gathered across processes with gradients, so N processes
compute exactly the single-process gradient of the same global batch; a test checks this). Batches are a
deterministic function of (seed, step), so a killed run resumes from its last checkpoint
(trainable weights only, i.e. adapter + head, with optimizer, scheduler and every process's RNG states;
the frozen backbone is never written) and sees the same data.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from dataclasses import asdict, dataclass, fields, is_dataclass
from typing import ClassVar
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from repro.store.atomic import write_json
from repro.core.backbones import load_backbone
from repro.core.encode import EncodeConfig, Tokenizer, _batches, _pad_id
from repro.training.heads import ModelSpec, head_inputs, head_parameters, make_head, model_spec
from repro.store.paths import data_dir
from repro.core.prompts import get_prompt

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
DATASETS = {"nli": "train/nli_triplets/snli_dev_test_triplets.jsonl"}


@dataclass
class TrainConfig:
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
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.1
    head_latents: int = 32
    head_heads: int = 8
    seed: int = 0
    eval_every: int = 50
    checkpoint_every: int = 50
    validation_sts_pairs: int = 500  # STS-B dev pairs for the validation curve
    hard_negatives: bool = True  # False: in-batch negatives only
    train_examples: int = 0  # 0 = every training triplet; n = a seeded subset of n (data-efficiency curves)

    # fields added after results were stored: left out of the identity while at their defaults, so the
    # stored runs of earlier configurations keep their keys
    ADDED_LATER: ClassVar[tuple[str, ...]] = ("hard_negatives", "train_examples")

    def identity(self) -> dict:
        """The settings that define a run (its key in the result store and its checkpoint check)."""
        return config_identity(self)

    def __post_init__(self):
        model_spec(self.model)
        get_prompt(self.prompt)
        if self.data not in DATASETS:
            raise ValueError(f"unknown training data '{self.data}'; valid: {', '.join(DATASETS)}")
        for name in ("steps", "batch_size", "max_length", "lora_r", "head_latents", "head_heads", "eval_every",
                     "checkpoint_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not self.temperature > 0 or not self.lr > 0:
            raise ValueError("temperature and lr must be positive")
        if isinstance(self.train_examples, bool) or not isinstance(self.train_examples, int) or self.train_examples < 0:
            raise ValueError(f"train_examples must be an integer >= 0 (0 = all), got {self.train_examples!r}")


def config_identity(config) -> dict:
    """``asdict(config)`` without the fields the class added later (``ADDED_LATER``) while at their defaults
    (also in nested configs, e.g. an AutoRegEmbed stage 2's stage 1), so that adding a setting keeps the keys
    of every result stored before it."""
    values = asdict(config)
    for f in fields(config):
        if is_dataclass(getattr(config, f.name)):
            values[f.name] = config_identity(getattr(config, f.name))
    for name in getattr(config, "ADDED_LATER", ()):
        default = next(f.default for f in fields(config) if f.name == name)
        if values[name] == default:
            del values[name]
    return values


def subset(rows: list, n: int, seed: int) -> list:
    """A seeded subset of ``n`` rows (in their original order); ``n = 0`` keeps them all."""
    if not n:
        return rows
    if n > len(rows):
        raise ValueError(f"train_examples={n} exceeds the {len(rows)} training examples")
    keep = np.random.default_rng([seed, 7]).permutation(len(rows))[:n]
    return [rows[i] for i in sorted(keep)]


def read_triplets(name: str = "nli") -> list[dict]:
    path = data_dir() / DATASETS[name]
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    with open(path) as handle:
        rows = [json.loads(line) for line in handle]
    return [{"query": r["anchor"], "positive": r["positive"], "negative": r["negative"]} for r in rows]


def split_triplets(config: TrainConfig) -> tuple[list[dict], list[dict]]:
    """Training and held-out triplets, split by anchor (an anchor's triplets never straddle the split)."""
    rows = read_triplets(config.data)
    anchors = sorted({r["query"] for r in rows})
    random.Random(config.seed).shuffle(anchors)
    held, count = set(), 0
    for anchor in anchors:
        if count >= config.validation_triplets:
            break
        held.add(anchor)
        count += sum(r["query"] == anchor for r in rows)
    return [r for r in rows if r["query"] not in held], [r for r in rows if r["query"] in held]


def batch_indices(n: int, batch_size: int, step: int, seed: int) -> list[int]:
    """The global batch of a step: a deterministic function of (seed, step) (epochs reshuffle)."""
    per_epoch = n // batch_size
    if per_epoch == 0:
        raise ValueError(f"batch size {batch_size} exceeds the {n} training examples")
    epoch, position = divmod(step, per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(n)
    return order[position * batch_size:(position + 1) * batch_size].tolist()


class EmbeddingModel(nn.Module):
    """Backbone (with LoRA) -> head input states -> trainable pooling or EOS -> L2-normalised embedding."""

    def __init__(self, backbone, spec: ModelSpec, head: nn.Module | None):
        super().__init__()
        self.backbone_ref = [backbone]  # not a submodule twice: the LM is registered below
        self.lm = backbone.model
        self.spec = spec
        self.head = head

    @property
    def backbone(self):
        return self.backbone_ref[0]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.backbone.hidden_states(input_ids, attention_mask)
        states, padding = head_inputs(hidden, attention_mask, self.spec.head_input)
        if self.head is None:
            return F.normalize(states[:, 0], dim=-1)
        return self.head(states, padding)


def build_model(config: TrainConfig, device: str | None = None) -> EmbeddingModel:
    """Backbone in the model's attention mode, LoRA adapters (peft), and the head (if any)."""
    from peft import LoraConfig, get_peft_model

    spec = model_spec(config.model)
    torch.manual_seed(config.seed)
    backbone = load_backbone(config.backbone, attention=spec.attention, device=device)
    quantizer = getattr(backbone.model, "hf_quantizer", None)
    if quantizer is not None:  # GGUF-loaded: weights are plain fp32 already
        quantizer.remove_quantization_config(backbone.model)
    lora = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                      target_modules=list(LORA_TARGETS), bias="none")
    backbone.model = get_peft_model(backbone.model, lora)
    backbone.set_attention(spec.attention)
    head = make_head(spec, backbone.hidden_size, backbone.num_layers, latents=config.head_latents,
                     heads=config.head_heads)
    model = EmbeddingModel(backbone, spec, head)
    return model.to(next(backbone.model.parameters()).device)


class Collator:
    """Texts -> right-padded ids and mask, with the prompt and prompt-aware truncation of repro.core.encode."""

    def __init__(self, tokenizer, config: TrainConfig):
        enc = EncodeConfig(prompt=config.prompt, max_length=config.max_length)
        self.tokenize = Tokenizer(tokenizer, get_prompt(config.prompt), enc)
        self.pad = _pad_id(tokenizer)

    def __call__(self, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        return pad_right([self.tokenize(t).ids for t in texts], self.pad)


def pad_right(items, pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-id lists -> right-padded ``ids`` and ``attention_mask`` tensors."""
    width = max(len(i) for i in items)
    ids = torch.full((len(items), width), pad, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for row, item in enumerate(items):
        ids[row, :len(item)] = torch.tensor(item)
        mask[row, :len(item)] = 1
    return ids, mask


def gather_with_grad(tensor: torch.Tensor) -> torch.Tensor:
    """All processes' rows, in process order; gradients flow back to each process's own rows."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()) \
            or torch.distributed.get_world_size() == 1:
        return tensor
    from torch.distributed.nn.functional import all_gather

    return torch.cat(all_gather(tensor), dim=0)


def info_nce(queries: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor | None,
             temperature: float) -> torch.Tensor:
    """InfoNCE over cosine similarity: each query's positive against every positive and hard negative."""
    docs = positives if negatives is None else torch.cat([positives, negatives])
    logits = queries @ docs.T / temperature
    return F.cross_entropy(logits, torch.arange(len(queries), device=queries.device))


def embed_texts(model: EmbeddingModel, collate: Collator, texts: list[str], batch_tokens: int = 4096,
                max_batch: int = 64) -> np.ndarray:
    """Embeddings of texts with a (trained) model, no gradients, length-sorted batches."""
    if not texts:
        return np.zeros((0, model.backbone.hidden_size), dtype=np.float32)
    lengths = [len(collate.tokenize(t).ids) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: -lengths[i])
    out = np.zeros((len(texts), model.backbone.hidden_size), dtype=np.float32)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for positions in _batches([lengths[i] for i in order], batch_tokens, max_batch):
            group = [order[p] for p in positions]
            ids, mask = collate([texts[i] for i in group])
            out[group] = model(ids.to(device), mask.to(device)).float().cpu().numpy()
    model.train(was_training)
    return out


def validation_sts(embed, pairs: int, seed: int = 0) -> float:
    """Spearman x100 of cosine similarity on a seeded sample of STS-B dev pairs; ``embed(texts)`` gives
    L2-normalised embeddings."""
    from scipy.stats import spearmanr

    from repro.core.tasks import _read_tsv, task_folder

    rows = _read_tsv(task_folder("STSBenchmark") / "dev.tsv")
    rows = random.Random(seed).sample(rows, min(pairs, len(rows)))
    a = embed([r["sentence1"] for r in rows])
    b = embed([r["sentence2"] for r in rows])
    return float(100 * spearmanr((a * b).sum(1), [float(r["score"]) for r in rows])[0])


def trainable_parameters(model: nn.Module) -> list[nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


def _state_file(output: Path) -> Path:
    return output / "train_state.json"


def save_checkpoint(folder: Path, model: nn.Module, optimizer, scheduler, rank: int, meta: dict) -> None:
    """Trainable weights, optimizer, scheduler and ``meta`` (step, history, counters) in one file written
    atomically by rank 0, and each process's RNG states."""
    from repro.store.atomic import atomic_path

    folder.mkdir(parents=True, exist_ok=True)
    rng = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate(),
           "step": meta["step"]}
    with atomic_path(folder / f"rng{rank}.pt") as tmp:
        torch.save(rng, tmp)
    if rank == 0:
        state = {"trainable": {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad},
                 "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "meta": meta}
        with atomic_path(folder / "state.pt") as tmp:
            torch.save(state, tmp)


def load_checkpoint(folder: Path, model: nn.Module, optimizer, scheduler, rank: int, config: dict) -> dict:
    """Restore what :func:`save_checkpoint` wrote (refusing another run's checkpoint); returns its ``meta``."""
    state = torch.load(folder / "state.pt", map_location="cpu", weights_only=False)
    if state["meta"]["config"] != config:
        raise ValueError(f"{folder} holds a run with another configuration; use a new output folder")
    missing = set(n for n, p in model.named_parameters() if p.requires_grad) - set(state["trainable"])
    if missing:
        raise ValueError(f"checkpoint {folder} lacks trainable parameters {sorted(missing)[:3]}...")
    with torch.no_grad():
        params = dict(model.named_parameters())
        for name, value in state["trainable"].items():
            params[name].copy_(value)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    rng_file = folder / f"rng{rank}.pt"
    rng = torch.load(rng_file, weights_only=False) if rng_file.is_file() else None
    if rng is not None and rng.get("step") == state["meta"]["step"]:  # only RNG states of the same snapshot
        torch.set_rng_state(rng["torch"])
        np.random.set_state(rng["numpy"])
        random.setstate(rng["python"])
    return state["meta"]


def make_accelerator():
    """The accelerate Accelerator every training uses (CPU here; the schedule steps once per optimizer step,
    whatever the number of processes)."""
    from accelerate import Accelerator

    return Accelerator(cpu=not torch.cuda.is_available(), step_scheduler_with_optimizer=False)


def run_training(accelerator, model: nn.Module, config, output: Path, step_loss, evaluate, desc: str,
                 progress: bool = True, dump_grads: str | Path | None = None) -> dict:
    """The one training loop (contrastive models and AutoRegEmbed's stages): AdamW on the trainable
    parameters, warm-up + ``config.schedule`` (linear unless set) learning rate, global gradient-norm clipping
    if the config has a ``max_grad_norm`` (logged as ``grad_norm``), checkpoints every
    ``config.checkpoint_every`` steps, resume from the last checkpoint, validation every ``config.eval_every``.

    ``step_loss(model, step, rank, world) -> (loss, tokens, examples)`` computes this process's share of the
    global batch of ``step`` (a deterministic function of the step, so a resumed run sees the same data);
    ``evaluate(core) -> dict`` runs on the main process only. Returns the counters and the history.
    """
    from tqdm.auto import tqdm
    from transformers import get_scheduler

    output = Path(output)
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=config.lr, weight_decay=config.weight_decay)
    scheduler = get_scheduler(getattr(config, "schedule", "linear"), optimizer, config.warmup_steps, config.steps)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    core = accelerator.unwrap_model(model)

    checkpoint = output / "checkpoint"
    history: list[dict] = []
    start_step, tokens_seen, examples_seen, seconds = 0, 0, 0, 0.0
    if (checkpoint / "state.pt").is_file():
        meta = load_checkpoint(checkpoint, core, optimizer, scheduler, accelerator.process_index,
                               config_identity(config))
        start_step, history = meta["step"], meta["history"]
        tokens_seen, examples_seen, seconds = meta["tokens_seen"], meta["examples_seen"], meta["seconds"]
        accelerator.print(f"resuming {output} at step {start_step}")
    rank, world = accelerator.process_index, accelerator.num_processes

    def evaluate_now(step: int, loss: float | None) -> None:
        record = {"step": step, "train_loss": loss}
        if accelerator.is_main_process:
            record.update(evaluate(core))
        history.append(record)

    def save(step: int) -> None:
        accelerator.wait_for_everyone()
        meta = {"config": config_identity(config), "step": step, "history": history, "tokens_seen": tokens_seen,
                "examples_seen": examples_seen, "seconds": seconds}
        save_checkpoint(checkpoint, core, optimizer, scheduler, accelerator.process_index, meta)
        if accelerator.is_main_process:
            write_json(_state_file(output), meta)  # a readable copy; resuming reads the checkpoint itself
        accelerator.wait_for_everyone()

    model.train()
    if start_step == 0 and not history:
        evaluate_now(0, None)
    bar = tqdm(range(start_step, config.steps), desc=desc, disable=not progress or not accelerator.is_main_process,
               initial=start_step, total=config.steps)
    for step in bar:
        t0 = time.perf_counter()
        loss, tokens, examples = step_loss(model, step, rank, world)
        accelerator.backward(loss)
        if dump_grads is not None and step == start_step and accelerator.is_main_process:
            torch.save({n: p.grad.detach().cpu().clone() for n, p in core.named_parameters() if p.grad is not None},
                       dump_grads)
        logged = {}
        if getattr(config, "max_grad_norm", None) is not None:  # (Paper 1's TrainConfig has no clipping)
            logged["grad_norm"] = float(accelerator.clip_grad_norm_(trainable_parameters(core), config.max_grad_norm))
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        seconds += time.perf_counter() - t0
        tokens_seen += int(accelerator.gather(torch.tensor([int(tokens)], device=accelerator.device)).sum())
        examples_seen += examples
        history.append({"step": step + 1, "train_loss": float(loss.detach()), "lr": float(scheduler.get_last_lr()[0]),
                        **logged})
        bar.set_postfix(loss=f"{float(loss.detach()):.3f}")
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            evaluate_now(step + 1, float(loss.detach()))
        if (step + 1) % config.checkpoint_every == 0 or step + 1 == config.steps:
            save(step + 1)
    return {"steps": config.steps, "examples_seen": examples_seen, "tokens_seen": tokens_seen,
            "train_seconds": seconds, "processes": world, "history": history}


def train(config: TrainConfig, output: str | Path, dump_grads: str | Path | None = None, progress: bool = True) -> dict:
    """Train (or resume) one model; returns the run summary (also written to ``output/summary.json``)."""
    output = Path(output)
    accelerator = make_accelerator()
    model = build_model(config, device=str(accelerator.device))
    collate = Collator(model.backbone.tokenizer, config)
    train_rows, held_out = split_triplets(config)
    train_rows = subset(train_rows, config.train_examples, config.seed)
    if config.batch_size % accelerator.num_processes:
        raise ValueError(f"batch size {config.batch_size} is not divisible by {accelerator.num_processes} processes")

    def step_loss(model, step: int, rank: int, world: int):
        local = config.batch_size // world
        rows = [train_rows[i] for i in batch_indices(len(train_rows), config.batch_size, step, config.seed)]
        mine = rows[rank * local:(rank + 1) * local]
        q_ids, q_mask = collate([r["query"] for r in mine])
        d_ids, d_mask = collate([r["positive"] for r in mine] + [r["negative"] for r in mine])
        device = accelerator.device
        q = model(q_ids.to(device), q_mask.to(device))
        d = model(d_ids.to(device), d_mask.to(device))
        negatives = gather_with_grad(d[local:]) if config.hard_negatives else None
        loss = info_nce(gather_with_grad(q), gather_with_grad(d[:local]), negatives, config.temperature)
        return loss, int(q_mask.sum() + d_mask.sum()), config.batch_size

    def evaluate(core: EmbeddingModel) -> dict:
        return {"validation_sts": validation_sts(lambda texts: embed_texts(core, collate, texts),
                                                  config.validation_sts_pairs, config.seed),
                "validation_loss": validation_loss(core, collate, held_out, config)}

    run = run_training(accelerator, model, config, output, step_loss, evaluate, f"train model {config.model}",
                       progress, dump_grads)
    core: EmbeddingModel = accelerator.unwrap_model(model)
    summary = {"config": config.identity(), "spec": asdict(core.spec), "head_parameters": head_parameters(core.head),
               "lora_parameters": sum(p.numel() for n, p in core.named_parameters() if "lora_" in n),
               "backbone_parameters": sum(p.numel() for n, p in core.lm.named_parameters() if "lora_" not in n),
               **run}
    if accelerator.is_main_process:
        save_model(core, config, output / "final")
        write_json(output / "summary.json", summary)
    accelerator.wait_for_everyone()
    return summary


def validation_loss(model: EmbeddingModel, collate: Collator, rows: list[dict], config: TrainConfig) -> float:
    """InfoNCE on held-out triplets, in batches of the training batch size (no gradients)."""
    losses = []
    for start in range(0, len(rows) - config.batch_size + 1, config.batch_size):
        chunk = rows[start:start + config.batch_size]
        q = torch.from_numpy(embed_texts(model, collate, [r["query"] for r in chunk]))
        p = torch.from_numpy(embed_texts(model, collate, [r["positive"] for r in chunk]))
        n = torch.from_numpy(embed_texts(model, collate, [r["negative"] for r in chunk]))
        losses.append(float(info_nce(q, p, n, config.temperature)))
    return float(np.mean(losses)) if losses else math.nan


def save_model(model: EmbeddingModel, config: TrainConfig, folder: Path) -> None:
    """The adapter (peft ``save_pretrained``), the head's weights and the config: what evaluation loads."""
    folder.mkdir(parents=True, exist_ok=True)
    model.backbone.model.save_pretrained(str(folder / "adapter"))
    if model.head is not None:
        torch.save(model.head.state_dict(), folder / "head.pt")
    write_json(folder / "train_config.json", config.identity())


def load_trained(folder: str | Path, device: str | None = None) -> tuple[EmbeddingModel, TrainConfig]:
    """Rebuild a trained model from :func:`save_model`'s folder (same code path as training)."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    folder = Path(folder)
    if not (folder / "train_config.json").is_file():
        raise FileNotFoundError(f"{folder} is not a saved model (no train_config.json)")
    raw = json.loads((folder / "train_config.json").read_text())
    config = TrainConfig(**{f.name: raw[f.name] for f in fields(TrainConfig) if f.name in raw})
    model = build_model(config, device=device)
    weights = load_file(str(folder / "adapter" / "adapter_model.safetensors"))
    set_peft_model_state_dict(model.backbone.model, weights)
    if model.head is not None:
        model.head.load_state_dict(torch.load(folder / "head.pt", map_location="cpu"))
    model.eval()
    return model, config


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """One ``--option`` per :class:`TrainConfig` field (the CLIs of train and trained share it)."""
    for f in fields(TrainConfig):
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=argument_type(f.default), default=f.default)


def argument_type(default):
    """The command-line parser of a config field: ints, floats, strings, and booleans as true/false
    (``bool("false")`` would be True); ``model`` takes a number or a baseline name."""
    if isinstance(default, bool):
        def parse_bool(text: str) -> bool:
            if text.lower() not in ("true", "false", "1", "0"):
                raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
            return text.lower() in ("true", "1")
        return parse_bool
    if isinstance(default, int):
        return lambda text: int(text) if text.lstrip("-").isdigit() else text
    return type(default)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_arguments(parser)
    parser.add_argument("--output", required=True)
    parser.add_argument("--dump-grads", help="(tests) save the first step's gradients to this file")
    args = vars(parser.parse_args(argv))
    output, dump = args.pop("output"), args.pop("dump_grads")
    summary = train(TrainConfig(**args), output, dump_grads=dump)
    print(json.dumps({k: v for k, v in summary.items() if k != "history"}, indent=1))


if __name__ == "__main__":
    main()
