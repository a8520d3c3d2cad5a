"""The declared training-budget rule, the same for every compared model (so that a training verdict compares converged models).

* **Dev signal**: STS-B dev Spearman x100 of cosine similarity on all 1,500 dev pairs (``validation_sts``), never a
  test set the book reports; evaluated at step 0 and every ``eval_every = max(25, ceil(5% of the cap))`` steps.
* **Stop** at an evaluation at step ``s`` when the best dev signal of the last 20% of the cap (the evaluations in
  ``(s - 0.2 cap, s]``: 120 steps, 4 evaluations at the 600-step cap) is not at least 0.5 above the best before
  them (steps ``<= s - 0.2 cap``, step 0 included); otherwise at the cap (``steps``). A patience of a fifth of the
  budget: the window never shrinks below four evaluations, so one flat evaluation early in a run cannot stop it
  (the first reading, 20% of the steps run so far, stopped a Paper 1 run at step 120 on a window of one
  evaluation, before any result was kept). A run whose dev signal falls from the start stops at ``0.2 cap`` with
  step 0 selected.
* **Select** the checkpoint with the best dev signal (ties: the earliest); step 0 (the untrained model) can be
  selected, and is then the finding.
* The learning rate is constant after warm-up (``schedule="constant_with_warmup"``), so a checkpoint at step ``s``
  is what a run of budget ``s`` would have given, and early stopping changes no earlier step.

:func:`should_stop` and :func:`select` read a run's history (the loop's evaluation records).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

SIGNAL = "validation_sts"
WINDOW = 0.2  # the last 20% of the cap
MIN_GAIN = 0.5  # points of dev Spearman x100
# AutoRegEmbed's stage 1 stops on its own objective instead (``CompressConfig.stop_signal``): the held-out
# reconstruction loss, lower is better, a gain of at least 0.05 nats (about 1% of the loss a few hundred steps in)
LOSS_SIGNAL = "validation_loss"
MIN_LOSS_GAIN = 0.05
SIGNALS = (SIGNAL, LOSS_SIGNAL)


def _oriented(signal: str) -> tuple[float, float]:
    """(sign that makes the signal higher-is-better, its minimum gain)."""
    if signal not in SIGNALS:
        raise ValueError(f"unknown stopping signal '{signal}'; valid: {', '.join(SIGNALS)}")
    return (-1.0, MIN_LOSS_GAIN) if signal == LOSS_SIGNAL else (1.0, MIN_GAIN)


def signal_of(config) -> str:
    """The history key a run under the rule stops and selects on (``stop_signal`` where a config has one)."""
    return getattr(config, "stop_signal", SIGNAL)


DEV_PAIRS = 1500  # every STS-B dev pair
STOPPING = ("fixed", "dev")  # "fixed": train `steps`; "dev": this rule, `steps` = the cap
SCHEDULES = ("linear", "cosine", "constant_with_warmup")  # transformers' get_scheduler names the loop accepts


def check_settings(config) -> None:
    """Clear errors for an unknown ``stopping`` or ``schedule`` of a training config."""
    for name, valid in (("stopping", STOPPING), ("schedule", SCHEDULES)):
        value = getattr(config, name, None)
        if value is not None and value not in valid:
            raise ValueError(f"unknown {name} {value!r}; valid: {', '.join(valid)}")


def eval_interval(cap: int) -> int:
    """Steps between dev evaluations for a run capped at ``cap`` steps: max(25, ceil(5% of the cap))."""
    return max(25, math.ceil(0.05 * cap))


def evaluations(history: Sequence[dict], signal: str = SIGNAL) -> list[tuple[int, float]]:
    """(step, dev signal) of every evaluation record in a run's history, in step order."""
    points = {int(r["step"]): float(r[signal]) for r in history if r.get(signal) is not None
              and not (isinstance(r[signal], float) and math.isnan(r[signal]))}
    return sorted(points.items())


def should_stop(history: Sequence[dict], cap: int, signal: str = SIGNAL) -> bool:
    """The stopping rule on the evaluations so far (the last one is the current step) of a run capped at
    ``cap`` steps."""
    sign, gain = _oriented(signal)
    points = evaluations(history, signal)
    if not points:
        return False
    boundary = points[-1][0] - WINDOW * cap
    before = [sign * v for s, v in points if s <= boundary]
    window = [sign * v for s, v in points if s > boundary]
    return bool(before) and bool(window) and max(window) < max(before) + gain


def select(history: Sequence[dict], signal: str = SIGNAL) -> tuple[int, float]:
    """The dev-selected step and its signal (the earliest of the best)."""
    sign, _ = _oriented(signal)
    points = evaluations(history, signal)
    if not points:
        raise ValueError(f"the run's history has no '{signal}' evaluation")
    best = max(sign * v for _, v in points)
    return next((s, v) for s, v in points if sign * v == best)


def grid(first: int, last: int) -> list[int]:
    """The doubling grid ``first, 2 first, 4 first, ...`` up to ``last``."""
    if first < 1:
        raise ValueError(f"the grid's first step must be positive, got {first}")
    steps, step = [], first
    while step <= last:
        steps.append(step)
        step *= 2
    return steps


def snapshots_to_keep(history: Sequence[dict], every: int, cap: int, signal: str = SIGNAL) -> set[int]:
    """The evaluated steps whose weights a run under the rule keeps: the doubling grid of evaluation steps (the
    budget points) and the best so far (the selected step, if the run stopped now); the loop deletes the other
    snapshots (a fully fine-tuned 135M encoder is ~0.5 GB a snapshot)."""
    points = evaluations(history, signal)
    keep = set(grid(every, cap)) & {s for s, _ in points}
    if points:
        keep.add(select(history, signal)[0])
    return keep


def stage1_under_rule(config, cap: int):
    """An AutoRegEmbed stage-1 ``config`` under the rule on its own objective: ``cap`` steps at most, constant
    learning rate after warm-up, evaluations and checkpoints every :func:`eval_interval` steps (the held-out
    reconstruction loss, which stops and selects, and the compressed embedding's STS-B dev Spearman on every dev
    pair, recorded beside it)."""
    every = eval_interval(cap)
    return replace(config, steps=cap, stopping="dev", schedule="constant_with_warmup", eval_every=every,
                   checkpoint_every=every, validation_sts_pairs=DEV_PAIRS, stop_signal=LOSS_SIGNAL)


def budget_points(selected: int, evaluated: Sequence[int]) -> list[int]:
    """Training budgets to score a run at: the doubling grid of evaluated steps (the first evaluation interval
    E, 2E, 4E, ... up to the last evaluated step, so every run of the same cap shares them: models are compared
    at the same budget) plus the dev-selected step (the converged budget). Step 0 is never a budget point."""
    steps = sorted(s for s in evaluated if s > 0)
    if not steps:
        return []
    points = set(grid(steps[0], steps[-1])) & set(steps)
    return sorted(points | ({selected} if selected > 0 else set()))


def under_budget_rule(config, cap: int = 600):
    """``config`` trained under the declared rule: ``cap`` steps at most, constant learning rate after warm-up,
    dev evaluations (every STS-B dev pair) and checkpoints every :func:`eval_interval` steps, early stopping and
    dev selection."""
    every = eval_interval(cap)
    return replace(config, steps=cap, stopping="dev", schedule="constant_with_warmup", eval_every=every,
                   checkpoint_every=every, validation_sts_pairs=DEV_PAIRS)


def run_budget(record: dict) -> dict:
    """What a stored run under the rule spent (its training record, :func:`repro.training.loop.run_training`'s
    summary and rows): where it stopped, the dev-selected step, the examples and tokens seen up to it, the CPU hours
    of its training steps up to it, the run's wall hours (all steps and dev evaluations), and the dev signal at step
    0 and at the selected step."""
    s = record["summary"]
    start = next(r[SIGNAL] for r in record["rows"] if r["step"] == 0 and SIGNAL in r)
    return {"stopped at": s["steps"], "early stop": s["stopped_early"], "selected step": s["selected_step"],
            "examples": s["selected_examples_seen"], "tokens": s["selected_tokens_seen"],
            "CPU hours (to selected)": s["selected_train_cpu_seconds"] / 3600,
            "wall hours (run: steps + dev evaluations)": (s["train_seconds"] + s.get("eval_seconds", 0)) / 3600,
            "dev at step 0": start, "dev selected": s["selected_signal"]}
