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
from dataclasses import asdict, fields, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch import nn

from repro.core.backbones import load_backbone
from repro.core.embedder import Embedder
from repro.core.inference import run_in_order
from repro.store.atomic import write_json
from repro.store.runs import RunSpec, run_folder_name
from repro.training.cli import add_config_arguments
from repro.training.config import Collator, TrainConfig
from repro.training.data import batch_indices, pad_right, split_triplets, subset, validation_sts
from repro.training.heads import ModelSpec, head_inputs, head_parameters, make_head, model_spec
from repro.training.loop import gather_with_grad, make_accelerator, run_training
from repro.training.lora import add_lora, merged_for_inference
from repro.training.objective import batch_loss, info_nce
from repro.training.packing import ROW_TOKENS, Packed, pack, packed_hidden_states, pool_packed


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

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                packed: Packed | None = None) -> torch.Tensor:
        """L2-normalised embeddings of right-padded ``input_ids``/``attention_mask``, or of a padding-free
        ``packed`` batch (:mod:`repro.training.packing`; the same embeddings within float tolerance). One
        ``forward`` for both, so that a DDP-wrapped model synchronises gradients either way."""
        if packed is not None:
            hidden = packed_hidden_states(self.backbone, packed)
            states, padding = pool_packed(hidden, packed, self.spec.head_input)
        else:
            hidden = self.backbone.hidden_states(input_ids, attention_mask)
            states, padding = head_inputs(hidden, attention_mask, self.spec.head_input)
        if self.head is None:
            return F.normalize(states[:, 0], dim=-1)
        return self.head(states, padding)


def build_model(config: TrainConfig, device: str | None = None) -> EmbeddingModel:
    """Backbone in the model's attention mode, LoRA adapters (peft), and the head (if any)."""
    spec = model_spec(config.model)
    torch.manual_seed(config.seed)
    backbone = load_backbone(config.backbone, attention=spec.attention, device=device, dtype="float32")
    backbone.model = add_lora(backbone.model, config.lora_r, config.lora_alpha, config.lora_dropout)
    backbone.set_attention(spec.attention)
    head = make_head(spec, backbone.hidden_size, backbone.num_layers, latents=config.head_latents,
                     heads=config.head_heads)
    model = EmbeddingModel(backbone, spec, head)
    return model.to(next(backbone.model.parameters()).device)


def embed_texts(model: EmbeddingModel, collate: Collator, texts: list[str], batch_tokens: int = 4096,
                max_batch: int = 64, packing: bool = False) -> np.ndarray:
    """Embeddings of texts with a (trained) model, no gradients, length-sorted batches
    (:func:`repro.core.inference.run_in_order`; ``packing``: each batch packed padding-free,
    :mod:`repro.training.packing`; the same embeddings within float tolerance)."""
    if not texts:
        return np.zeros((0, model.backbone.hidden_size), dtype=np.float32)
    ids = [collate.tokenize(t).ids for t in texts]
    device = next(model.parameters()).device
    causal = model.spec.attention == "causal"

    def forward(group: list[int]) -> np.ndarray:
        if packing:  # the group's first item is its longest
            packed = pack([ids[i] for i in group], collate.pad, causal, max(ROW_TOKENS, len(ids[group[0]])))
            return model(packed=packed.to(device)).float().cpu().numpy()
        batch_ids, mask = pad_right([ids[i] for i in group], collate.pad)
        return model(batch_ids.to(device), mask.to(device)).float().cpu().numpy()

    return run_in_order([len(i) for i in ids], forward, grouping="tokens" if packing else "padded",
                        batch_tokens=batch_tokens, max_batch=max_batch, model=model)


def train(config: TrainConfig, output: str | Path, dump_grads: str | Path | None = None, progress: bool = True) -> dict:
    """Train (or resume) one model; returns the run summary (also written to ``output/summary.json``)."""
    output = Path(output)
    accelerator = make_accelerator()
    model = build_model(config, device=str(accelerator.device))
    collate = Collator(model.backbone.tokenizer, config)
    train_rows, held_out = split_triplets(config.data, config.validation_triplets, config.seed)
    train_rows = subset(train_rows, config.train_examples, config.seed)
    if config.batch_size % accelerator.num_processes:
        raise ValueError(f"batch size {config.batch_size} is not divisible by {accelerator.num_processes} processes")

    def step_loss(model, step: int, rank: int, world: int):
        local = config.batch_size // world
        rows = [train_rows[i] for i in batch_indices(len(train_rows), config.batch_size, step, config.seed)]
        mine = rows[rank * local:(rank + 1) * local]
        loss, tokens = batch_loss(model, collate, mine, config, accelerator.device, gather_with_grad)
        return loss, tokens, config.batch_size

    def evaluate(core: EmbeddingModel) -> dict:
        merged = merged_for_inference(core)  # the adapters merged into a copy: ~1.3x faster, same embeddings
        return {"validation_sts": validation_sts(lambda texts: embed_texts(merged, collate, texts,
                                                                           packing=config.packing),
                                                  config.validation_sts_pairs, config.seed),
                "validation_loss": validation_loss(merged, collate, held_out, config)}

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
    """InfoNCE on held-out rows, in batches of the training batch size (no gradients; rows without a hard
    negative score against the batch's other documents only)."""
    usable = len(rows) - len(rows) % config.batch_size
    if not usable:
        return math.nan
    rows = rows[:usable]

    def embed(texts):
        return torch.from_numpy(embed_texts(model, collate, texts, packing=config.packing))

    q, p = embed([r["query"] for r in rows]), embed([r["positive"] for r in rows])
    has = torch.tensor([r.get("negative") is not None for r in rows], dtype=torch.bool)
    n = torch.zeros_like(p)
    n[has] = embed([r["negative"] for r in rows if r.get("negative") is not None])
    losses = []
    for start in range(0, usable, config.batch_size):
        part = slice(start, start + config.batch_size)
        negatives = n[part] if config.hard_negatives else None
        losses.append(float(info_nce(q[part], p[part], negatives, config.temperature, has[part])))
    return float(np.mean(losses))


def save_model(model: EmbeddingModel, config: TrainConfig, folder: Path) -> None:
    """The adapter (peft ``save_pretrained``), the head's weights and the config: what evaluation loads."""
    folder.mkdir(parents=True, exist_ok=True)
    model.backbone.model.save_pretrained(str(folder / "adapter"))
    if model.head is not None:
        torch.save(model.head.state_dict(), folder / "head.pt")
    write_json(folder / "train_config.json", config.identity())


def load_trained(folder: str | Path, device: str | None = None) -> tuple[EmbeddingModel, TrainConfig]:
    """Rebuild a trained model from :func:`save_model`'s folder (same code path as training)."""

    folder = Path(folder)
    if not (folder / "train_config.json").is_file():
        raise FileNotFoundError(f"{folder} is not a saved model (no train_config.json)")
    raw = json.loads((folder / "train_config.json").read_text())
    config = TrainConfig(**{f.name: raw[f.name] for f in fields(TrainConfig) if f.name in raw})
    model = build_model(config, device=device)
    from peft import set_peft_model_state_dict  # (here: pages that read stored results never import peft)

    weights = load_file(str(folder / "adapter" / "adapter_model.safetensors"))
    set_peft_model_state_dict(model.backbone.model, weights)
    if model.head is not None:
        model.head.load_state_dict(torch.load(folder / "head.pt", map_location="cpu"))
    model.eval()
    return model, config


RUNS_EXPERIMENT = "trained_runs"


def run_spec(config: TrainConfig, progress: bool = True) -> RunSpec:
    """How the run store trains and loads one contrastive model (folder ``<backbone>-model<m>-<hash>``); its
    record goes to ``results/trained_runs/`` under ``{"train": config.identity()}``."""
    return RunSpec(name=run_folder_name(config.backbone, f"model{config.model}", config.identity()),
                   experiment=RUNS_EXPERIMENT, params={"train": config.identity()}, config=config,
                   train=lambda folder: train(config, folder, progress=progress), load=load_trained,
                   weights_file="train_config.json")


class TrainedEmbedder(Embedder):
    """A trained :class:`EmbeddingModel` (one of the five designs or a contrastive baseline) as an
    :class:`repro.core.embedder.Embedder`: L2-normalised embeddings of the texts rendered with the run's
    prompt, truncated at ``max_length`` (default: the training config's)."""

    def __init__(self, model: EmbeddingModel, config: TrainConfig, max_length: int | None = None, digest: str = ""):
        self.model = model
        self.config = config if max_length is None else replace(config, max_length=max_length)
        self.collate = Collator(model.backbone.tokenizer, self.config)
        self.digest = digest
        self._merged = None

    @property
    def inference_model(self) -> EmbeddingModel:
        """The model with its adapters merged (:func:`repro.training.lora.merged_for_inference`), made at the
        first encode: the model's weights must not change after that (build another embedder)."""
        if self._merged is None:
            self._merged = merged_for_inference(self.model)
        return self._merged

    @property
    def dim(self) -> int:
        return self.model.backbone.hidden_size

    @property
    def identity(self) -> str:
        return f"trained-{self.config.backbone}-model{self.config.model}-{self.digest or 'local'}"

    def embed(self, texts: list[str], role: str, instruction: str | None) -> np.ndarray:
        """``instruction``: glued before the text (prompt ``instruction``: instruction + text + EOS, Tang &
        Yang's evaluation); only for models trained with plain text + EOS (prompt ``none``)."""
        if instruction is None:
            return embed_texts(self.inference_model, self.collate, texts)
        if self.config.prompt != "none":
            raise ValueError(f"task instructions need a model trained with prompt 'none', not '{self.config.prompt}'")
        if getattr(self, "_instructed", (None, None))[0] != instruction:
            collate = Collator(self.model.backbone.tokenizer, replace(self.config, prompt="instruction"), instruction)
            self._instructed = (instruction, collate)
        return embed_texts(self.inference_model, self._instructed[1], texts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_arguments(parser, TrainConfig)
    parser.add_argument("--output", required=True)
    parser.add_argument("--dump-grads", help="(tests) save the first step's gradients to this file")
    args = vars(parser.parse_args(argv))
    output, dump = args.pop("output"), args.pop("dump_grads")
    summary = train(TrainConfig(**args), output, dump_grads=dump)
    print(json.dumps({k: v for k, v in summary.items() if k != "history"}, indent=1))


if __name__ == "__main__":
    main()
