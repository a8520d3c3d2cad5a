"""Training AutoRegEmbed's two stages through the shared loop (:func:`repro.training.loop.run_training`), saving
and loading the encoder."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import asdict
from pathlib import Path

import torch

from repro.autoregembed.config import QUERY_PROMPT, AlignConfig, CompressConfig, inference_settings, stage_of
from repro.autoregembed.data import read_stage1, split_align
from repro.autoregembed.model import AutoRegModel, TextIds, build_autoreg, embed_texts
from repro.autoregembed.objectives import align_batch, reference_scores, seen_indices
from repro.store.atomic import atomic_path, write_json
from repro.store.fingerprint import weights_digest
from repro.store.identity import config_from_identity, config_identity
from repro.store.runs import RunSpec, ensure_trained, run_folder_name
from repro.training import budget
from repro.training.data import batch_indices, validation_sts
from repro.training.loop import make_accelerator, run_training


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
    config = config_from_identity(cls, saved["config"])  # a setting the identity leaves out: the earlier runs' value
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


def compress_batch(texts: TextIds, rows: list[dict], device, packed: bool = False) -> dict:
    """Stage 1's batch of ``rows``: right-padded tensors, or (``packed``) the token-id lists the padding-free
    packed path reads (:func:`repro.autoregembed.objectives.compression_loss`; the same loss and gradients)."""
    inputs = [texts.stage1_input(r["context"], r["instruction"]) for r in rows]
    targets = [texts.target(r["output"]) for r in rows]
    if packed:
        return {"objective": "compress", "inputs": inputs, "targets": targets, "pad": texts.pad,
                "tokens": sum(map(len, inputs)) + sum(map(len, targets))}
    ids, mask = texts.pad_batch(inputs)
    t_ids, t_mask = texts.pad_batch(targets)
    return {"objective": "compress", "ids": ids.to(device), "mask": mask.to(device), "target_ids": t_ids.to(device),
            "target_mask": t_mask.to(device), "tokens": int(mask.sum() + t_mask.sum())}


def inference_embed(core: AutoRegModel, texts: TextIds, config):
    """``items -> embeddings`` of a stage's encoder as its inference writes them (the dev signal): stage 2's
    instruction and newline, stage 1's those of its template."""
    settings = inference_settings(config)
    return lambda items: embed_texts(core, texts, items, QUERY_PROMPT, settings["instruction"],
                                     newline=config.template == "book")  # (the book's dev: training's form)


def train_compression(config: CompressConfig, output: str | Path, progress: bool = True) -> dict:
    """Stage 1 (or resume it); the encoder is saved in ``output/final``."""
    output = Path(output)
    accelerator = make_accelerator()
    model = build_autoreg(config, device=str(accelerator.device))
    texts = TextIds.of(model.backbone.tokenizer, config)
    rows = read_stage1(config.data)
    held, train_rows = rows[:config.validation_examples], rows[config.validation_examples:]
    _check_divisible(config.batch_size, accelerator.num_processes)

    def step_loss(wrapped, step, rank, world):
        local = config.batch_size // world
        chosen = [train_rows[i] for i in batch_indices(len(train_rows), config.batch_size, step, config.seed)]
        batch = compress_batch(texts, chosen[rank * local:(rank + 1) * local], accelerator.device, packed=True)
        return wrapped(batch), batch["tokens"], config.batch_size

    def evaluate(core):
        record = {"validation_loss": validation_reconstruction(core, texts, held)}
        if config.validation_sts_pairs:  # the budget rule's dev signal: the compressed embedding on STS-B dev
            record["validation_sts"] = validation_sts(inference_embed(core, texts, config),
                                                      config.validation_sts_pairs, config.seed)
        return record

    run = run_training(accelerator, model, config, output, step_loss, evaluate, "AutoRegEmbed compression",
                       progress, checkpoint_at_end=False)  # (_finish deletes a finished run's checkpoint)
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
    initial_digest = weights_digest(model)
    texts = TextIds.of(model.backbone.tokenizer, config)
    train_rows, held = split_align(config)
    _check_divisible(config.batch_size, accelerator.num_processes)

    reference_file = output / "reference.pt"  # the initial model's scores of the rows the steps draw
    if reference_file.is_file():
        reference = torch.load(reference_file)
    else:
        reference = {"config": config_identity(config), "index": [], "scores": {}, "steps": 0,
                     "initial_digest": initial_digest}
    if reference["config"] != config_identity(config):
        raise ValueError(f"{reference_file} belongs to another configuration; use a new output folder")
    if reference.get("initial_digest", initial_digest) != initial_digest:  # (files of before the digest: unchecked)
        raise ValueError(f"{reference_file} was computed from other stage-1 weights (sha256 "
                         f"{reference['initial_digest']}, now {initial_digest}): stage 1 was retrained; delete "
                         f"{output} to start this run again from the current stage 1")
    initial: dict = {}
    position: dict = {}

    def initial_model(step: int) -> AutoRegModel:
        """The model the run started from: itself before its first update, else rebuilt from stage 1."""
        if step == 0 and not (output / "checkpoint" / "state.pt").is_file():
            return model
        if "model" not in initial:
            rebuilt = build_autoreg(config, device=str(accelerator.device))
            if compressed is not None:
                _load_encoder_weights(rebuilt, Path(compressed))
            if weights_digest(rebuilt) != initial_digest:
                raise RuntimeError("the rebuilt initial model differs from the run's start; cannot extend "
                                   f"{reference_file}")
            initial["model"] = rebuilt
        return initial["model"]

    def extend_reference(step: int) -> None:
        """Reference scores for the rows of steps up to the next block: every step at once under a fixed
        budget; under the budget rule the first 20% of the cap, then one evaluation interval at a time (a run
        that stops early never pays for rows it does not draw)."""
        covered = reference.get("steps", config.steps)  # (files of before the blocks: every step)
        if step < covered and position:
            return
        if step >= covered:
            end = config.steps if config.stopping != "dev" else min(
                config.steps, max(step + config.eval_every, math.ceil(budget.WINDOW * config.steps)))
            new = sorted(set(seen_indices(len(train_rows), config, end)) - set(reference["index"]))
            if new:
                scores = reference_scores(initial_model(step), texts, [train_rows[i] for i in new], config)
                reference["scores"] = {term: torch.cat([reference["scores"][term], values])
                                       if term in reference["scores"] else values for term, values in scores.items()}
                reference["index"] = list(reference["index"]) + new
            reference["steps"] = end
            if accelerator.is_main_process:
                output.mkdir(parents=True, exist_ok=True)
                with atomic_path(reference_file) as tmp:
                    torch.save(reference, tmp)
        position.clear()
        position.update({row: i for i, row in enumerate(reference["index"])})

    def step_loss(wrapped, step, rank, world):
        extend_reference(step)
        local = config.batch_size // world
        chosen = batch_indices(len(train_rows), config.batch_size, step, config.seed)[rank * local:(rank + 1) * local]
        batch = align_batch(texts, [train_rows[i] for i in chosen], config, accelerator.device)
        where = torch.tensor([position[i] for i in chosen])
        batch["reference"] = {term: values[where].to(accelerator.device)
                              for term, values in reference["scores"].items()}
        return wrapped(batch), batch["tokens"], config.batch_size

    def evaluate(core):
        return {"validation_sts": validation_sts(inference_embed(core, texts, config), config.validation_sts_pairs,
                                                 config.seed)}

    run = run_training(accelerator, model, config, output, step_loss, evaluate, "AutoRegEmbed alignment", progress,
                       checkpoint_at_end=False)  # (_finish deletes a finished run's checkpoint)
    return _finish(accelerator, model, config, output, run | {"initial_digest": initial_digest})


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


RUNS_EXPERIMENT = "autoreg_runs"


def run_params(config: CompressConfig | AlignConfig) -> dict:
    """The key of a run's stored training record in ``results/autoreg_runs/``."""
    return {"stage": stage_of(config), "config": config_identity(config)}


def run_spec(config: CompressConfig | AlignConfig, progress: bool = True) -> RunSpec:
    """How the run store trains and loads one AutoRegEmbed stage (folder ``<backbone>-ar-<stage>-<hash>``);
    stage 2 first trains (or finds) its stage 1."""
    def train_here(folder: Path):
        if isinstance(config, AlignConfig):
            compressed = None
            if config.compress is not None:
                compressed = ensure_trained(run_spec(config.compress, progress))[0] / "final"
            train_alignment(config, folder, compressed, progress=progress)
        else:
            train_compression(config, folder, progress=progress)

    return RunSpec(name=run_folder_name(config.backbone, f"ar-{stage_of(config)}", config_identity(config)),
                   experiment=RUNS_EXPERIMENT, params=run_params(config), config=config, train=train_here,
                   load=load_encoder, weights_file="config.json")
