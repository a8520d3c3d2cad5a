"""The one training loop (accelerate): AdamW, warm-up and schedule, clipping, checkpoints and resume, validation;
and the cross-process gather InfoNCE needs."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from repro.store.atomic import atomic_path, write_json
from repro.store.identity import config_identity
from repro.training import budget
from repro.training.budget import should_stop


@dataclass
class LoopSettings:
    """Every setting :func:`run_training` reads, declared once (flat fields: a config's identity and result keys
    are the same as before this base existed): LoRA sizes, the seed, how often the loop validates and checkpoints,
    the optimisation (steps, learning rate, weight decay, warm-up, schedule), the stopping rule, gradient clipping
    and accumulation. Each method's config keeps its own defaults; a setting a config did not have before this
    base declared it is in that config's ``ADDED_LATER`` (out of its identity while at its default)."""

    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    seed: int = 0
    eval_every: int = 50
    checkpoint_every: int = 50
    steps: int = 100
    lr: float = 1e-4
    weight_decay: float = 0.0
    warmup_steps: int = 0
    schedule: str = "linear"  # after warm-up: "linear" decay to 0 at `steps`, "cosine", "constant_with_warmup"
    stopping: str = "fixed"  # "fixed": train `steps`; "dev": the declared budget rule (repro.training.budget)
    max_grad_norm: float | None = None  # clip the global gradient norm; None: off
    accumulation: int = 1  # batches per optimizer step (their gradients averaged)


def gather_with_grad(tensor: torch.Tensor) -> torch.Tensor:
    """All processes' rows, in process order; gradients flow back to each process's own rows."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()) \
            or torch.distributed.get_world_size() == 1:
        return tensor
    from torch.distributed.nn.functional import all_gather

    return torch.cat(all_gather(tensor), dim=0)


def trainable_parameters(model: nn.Module) -> list[nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


def _state_file(output: Path) -> Path:
    return output / "train_state.json"


def save_checkpoint(folder: Path, model: nn.Module, optimizer, scheduler, rank: int, meta: dict) -> None:
    """Trainable weights, optimizer, scheduler and ``meta`` (step, history, counters) in one file written
    atomically by rank 0, and each process's RNG states."""

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
    whatever the number of processes; bf16 autocast on CUDA)."""

    # fp32 master weights everywhere (the backbones load in fp32 for training); on GPUs that support it, bf16
    # autocast for the forward and backward (accelerate's mixed precision); on CPU none (bf16 is slower here)
    # accelerate and transformers are imported where they are used: pages that read stored results skip them
    from accelerate import Accelerator

    cuda = torch.cuda.is_available()
    mixed = "bf16" if cuda and torch.cuda.is_bf16_supported() else "no"
    return Accelerator(cpu=not cuda, step_scheduler_with_optimizer=False, mixed_precision=mixed)


def run_training(accelerator, model: nn.Module, config: LoopSettings, output: Path, step_loss, evaluate, desc: str,
                 progress: bool = True, dump_grads: str | Path | None = None, checkpoint_at_end: bool = True) -> dict:
    """The one training loop (contrastive models and AutoRegEmbed's stages): AdamW on the trainable
    parameters, warm-up + ``config.schedule`` (linear unless set) learning rate, global gradient-norm clipping
    if the config has a ``max_grad_norm`` (logged as ``grad_norm``), checkpoints every
    ``config.checkpoint_every`` steps and at the end (unless ``checkpoint_at_end`` is off: a caller that deletes a
    finished run's checkpoint unread), resume from the last checkpoint (a finished run resumes as finished),
    validation every ``config.eval_every``.

    ``step_loss(model, step, rank, world) -> (loss, tokens, examples)`` computes this process's share of the
    global batch of ``step`` (a deterministic function of the step, so a resumed run sees the same data); with a
    config's ``accumulation`` of n > 1, each optimizer step sums the gradients of batches ``n * step`` to
    ``n * step + n - 1`` (each loss divided by n: their mean), so the contrastive negatives stay inside one batch
    while a step sees n of them (the official Paper 1 scheme);
    ``evaluate(core) -> dict`` runs on the main process only. Returns the counters and the history.
    """

    from accelerate.utils import broadcast_object_list
    from transformers import get_scheduler

    output = Path(output)
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=config.lr, weight_decay=config.weight_decay)
    scheduler = get_scheduler(config.schedule, optimizer, config.warmup_steps, config.steps)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    core = accelerator.unwrap_model(model)
    by_dev = config.stopping == "dev"
    signal = budget.signal_of(config)  # what the rule stops and selects on

    checkpoint = output / "checkpoint"
    history: list[dict] = []
    start_step, stopped = 0, False
    counters = {"tokens_seen": 0, "examples_seen": 0, "seconds": 0.0, "cpu_seconds": 0.0, "eval_seconds": 0.0}
    if (checkpoint / "state.pt").is_file():
        meta = load_checkpoint(checkpoint, core, optimizer, scheduler, accelerator.process_index,
                               config_identity(config))
        start_step, history = meta["step"], meta["history"]
        stopped = by_dev and should_stop(history, config.steps, signal)  # the rule, re-read from the history
        counters.update({k: meta[k] for k in counters if k in meta})
        accelerator.print(f"resuming {output} at step {start_step}")
    rank, world = accelerator.process_index, accelerator.num_processes

    def evaluate_now(step: int, loss: float | None) -> None:
        t0 = time.perf_counter()
        record = {"step": step, "train_loss": loss}
        if accelerator.is_main_process:
            record.update(evaluate(core))
            if by_dev:
                save_snapshot(output, core, step)
        counters["eval_seconds"] += time.perf_counter() - t0
        history.append({**record, **{k: counters[k] for k in ("tokens_seen", "examples_seen", "seconds",
                                                               "cpu_seconds")}})
        if by_dev and accelerator.is_main_process:
            prune_snapshots(output, budget.snapshots_to_keep(history, config.eval_every, config.steps, signal))

    def save(step: int, resumable: bool = True) -> None:
        accelerator.wait_for_everyone()
        meta = {"config": config_identity(config), "step": step, "history": history, "stopped": stopped, **counters}
        if resumable:
            save_checkpoint(checkpoint, core, optimizer, scheduler, accelerator.process_index, meta)
        if accelerator.is_main_process:
            write_json(_state_file(output), meta)  # a readable copy; resuming reads the checkpoint itself
        accelerator.wait_for_everyone()

    model.train()
    if start_step == 0 and not history:
        evaluate_now(0, None)
    end = start_step if stopped else config.steps
    bar = tqdm(range(start_step, end), desc=desc, disable=not progress or not accelerator.is_main_process,
               initial=start_step, total=config.steps)
    micro = int(config.accumulation)  # batches whose gradients one optimizer step sums
    for step in bar:
        t0, c0 = time.perf_counter(), time.process_time()
        if micro == 1:
            loss, tokens, examples = step_loss(model, step, rank, world)
            accelerator.backward(loss)
        else:  # batch step * micro + m of the data stream; each loss is scaled so the gradients average them
            losses, tokens, examples = [], 0, 0
            for m in range(micro):
                part, part_tokens, part_examples = step_loss(model, step * micro + m, rank, world)
                accelerator.backward(part / micro)
                losses.append(part.detach())
                tokens, examples = tokens + part_tokens, examples + part_examples
            loss = torch.stack(losses).mean()
        if dump_grads is not None and step == start_step and accelerator.is_main_process:
            torch.save({n: p.grad.detach().cpu().clone() for n, p in core.named_parameters() if p.grad is not None},
                       dump_grads)
        logged = {}
        if config.max_grad_norm is not None:  # (Paper 1's TrainConfig has no clipping)
            logged["grad_norm"] = float(accelerator.clip_grad_norm_(trainable_parameters(core), config.max_grad_norm))
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        counters["seconds"] += time.perf_counter() - t0
        counters["cpu_seconds"] += time.process_time() - c0
        counters["tokens_seen"] += int(accelerator.gather(torch.tensor([int(tokens)], device=accelerator.device)).sum())
        counters["examples_seen"] += examples
        history.append({"step": step + 1, "train_loss": float(loss.detach()), "lr": float(scheduler.get_last_lr()[0]),
                        **logged})
        bar.set_postfix(loss=f"{float(loss.detach()):.3f}")
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            evaluate_now(step + 1, float(loss.detach()))
            if by_dev:
                stopped = bool(broadcast_object_list([should_stop(history, config.steps, signal)
                                                      if accelerator.is_main_process else None])[0])
        if step + 1 == config.steps or stopped:
            # without checkpoint_at_end, the record of the end but no resume checkpoint (for a fully fine-tuned 135M
            # encoder 1.6 GB its caller would delete unread); killed before its weights are saved, the run resumes
            # from its last periodic checkpoint and retrains the same steps
            save(step + 1, resumable=checkpoint_at_end)
        elif (step + 1) % config.checkpoint_every == 0:
            save(step + 1)
        if stopped:
            accelerator.print(f"{output}: dev signal flat over the last {budget.WINDOW:.0%} of the cap; "
                              f"stopped at step {step + 1}")
            break
    trained = max((r["step"] for r in history), default=0)
    run = {"steps": trained, "examples_seen": counters["examples_seen"], "tokens_seen": counters["tokens_seen"],
           "train_seconds": counters["seconds"], "train_cpu_seconds": counters["cpu_seconds"],
           "eval_seconds": counters["eval_seconds"], "processes": world, "history": history}
    if by_dev:
        chosen, value = budget.select(history, signal)
        at = next(r for r in history if r["step"] == chosen and signal in r)
        if accelerator.is_main_process:
            load_snapshot(output, core, chosen)
        accelerator.wait_for_everyone()
        run.update({"cap": config.steps, "stopped_early": stopped, "selected_step": chosen,
                    "selected_signal": value, "selected_examples_seen": at["examples_seen"],
                    "selected_tokens_seen": at["tokens_seen"], "selected_train_seconds": at["seconds"],
                    "selected_train_cpu_seconds": at["cpu_seconds"]})
    return run


def snapshot_file(output: Path, step: int) -> Path:
    return Path(output) / "snapshots" / f"step-{step:05d}.pt"


def save_snapshot(output: Path, model: nn.Module, step: int) -> None:
    """The trainable weights at an evaluated step (the dev-selected checkpoint and the budget points are read
    back from these), written atomically."""
    path = snapshot_file(output, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        torch.save({n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}, tmp)


def prune_snapshots(output: Path, keep: set[int]) -> None:
    """Delete the snapshots of evaluated steps not in ``keep`` (neither a budget point nor the best so far)."""
    for path in (Path(output) / "snapshots").glob("step-*.pt"):
        if int(path.stem.split("-")[1]) not in keep:
            path.unlink(missing_ok=True)


def load_snapshot(output: Path, model: nn.Module, step: int) -> None:
    """Set the trainable weights to those saved at ``step``."""
    state = torch.load(snapshot_file(output, step), map_location="cpu")
    params = dict(model.named_parameters())
    missing = {n for n, p in params.items() if p.requires_grad} - set(state)
    if missing:
        raise ValueError(f"snapshot of step {step} in {output} lacks {sorted(missing)[:3]}...")
    with torch.no_grad():
        for name, value in state.items():
            params[name].copy_(value)
