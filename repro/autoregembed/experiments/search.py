"""Paper 3's declared dev search under the budget rule, before its verdict (so that a training verdict compares converged models).

Stage 2 lowered STS-B dev from its first steps in every earlier run but the JS one, at one learning rate
(5e-6, full fine-tuning). Before a verdict, each side gets a small search of the same size (five runs), every
run under the declared rule (:mod:`repro.training.budget`: constant learning rate after warm-up, dev signal on all
1,500 STS-B dev pairs, early stopping, the dev-best checkpoint selected; step 0, the untrained start, can win)
on the declared Paper 3 mix (SNLI + MEDI triplets, ``nli-medi``), and is selected on dev only:

* **AutoRegEmbed stage 2**: the learning rate (1e-6, 2e-6, 5e-6; full fine-tuning, log-prob), then at the best
  of those the divergence (JS, the one variant whose dev rose) and LoRA (r16, its own stage 1 in LoRA too, lr
  1e-4 as LoRA needs a larger rate than full fine-tuning).
* **The contrastive baseline** (mean pooling, in-batch + hard negative; LoRA r16, tau 0.05): the learning
  rate (5e-5, 1e-4, 2e-4), then at the best the pooling (last token) and the temperature (0.02, the official
  repository's).

The cap is 300 steps x 8 triplets (2,400 triplets), not the 600 x 16 of Paper 1: on this machine a stage-2 step
costs ~10 s (two encoder and three decoder passes) and a dev evaluation of the compression encoder ~5 min, and
every run must finish, with its stage 1, inside one session (the declared cut order, last item: a lower cap).

Phase 2 of each search is defined only once phase 1's records are stored (its learning rate is phase 1's dev
winner). The runs train through the run store, so their records land in ``results/autoreg_runs`` and
``results/trained_runs``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from repro.autoregembed import train as ar_train
from repro.autoregembed.config import AlignConfig, CompressConfig
from repro.autoregembed.experiments.baselines import contrastive_config
from repro.store.results import load_result
from repro.store.runs import ensure_trained
from repro.training import budget
from repro.training import contrastive as contrastive_train
from repro.training.contrastive import TrainConfig

CAP = 300
BATCH = 8
DATA = "nli-medi"
ALIGN_LRS = (1e-6, 2e-6, 5e-6)
LORA_LR = 1e-4
BASELINE = "mean, in-batch + hard negative"
BASELINE_LRS = (5e-5, 1e-4, 2e-4)
SIDES = ("autoregembed", "baseline")
SIDE_NAMES = {"autoregembed": "AutoRegEmbed", "baseline": "contrastive baseline"}  # as the pages name them


def base_config(backbone: str = "smollm2-135m", seed: int = 0, cap: int = CAP, template: str = "book") -> AlignConfig:
    """Stage 2 under the budget rule from the book's stage 1 (300 steps of the instruction data, lr 1e-4, batch
    8, 160 tokens): batch 8, 10 warm-up steps, log-prob divergence, one fused encoder and decoder call a step
    (``template``: the inputs' form, the book's for the searched runs)."""
    compress = CompressConfig(backbone=backbone, steps=300, batch_size=BATCH, lr=1e-4, max_length=160,
                              validation_examples=64, warmup_steps=10, data="instruction", template=template)
    align = AlignConfig(compress=compress, backbone=backbone, batch_size=BATCH, lr=5e-6, warmup_steps=10,
                        validation_triplets=300, data=DATA, fused=True, seed=seed, template=template)
    return budget.under_budget_rule(align, cap)


def _lora(config: AlignConfig) -> AlignConfig:
    return replace(config, finetune="lora", lr=LORA_LR, compress=replace(config.compress, finetune="lora"))


def _record(config: AlignConfig | TrainConfig) -> dict | None:
    spec = ar_train.run_spec(config) if isinstance(config, AlignConfig) else contrastive_train.run_spec(config)
    return load_result(spec.experiment, spec.params)


def _selected(record: dict) -> float:
    return float(record["summary"]["selected_signal"])


def _phase_two_lr(phase_one: dict) -> float | None:
    """The dev winner's learning rate among phase 1's runs, once all are stored (ties: the smaller rate)."""
    records = {label: _record(config) for label, config in phase_one.items()}
    if any(r is None for r in records.values()):
        return None
    best = max(records, key=lambda label: (_selected(records[label]), -phase_one[label].lr))
    return phase_one[best].lr


def search_configs(side: str, base: AlignConfig) -> dict[str, AlignConfig | TrainConfig]:
    """The search's runs of ``side`` (:data:`SIDES`), label -> config: phase 1 always, phase 2 once phase 1's
    records are stored."""
    if side not in SIDES:
        raise ValueError(f"unknown search side '{side}'; valid: {', '.join(SIDES)}")
    if base.stopping != "dev":
        raise ValueError("the search runs under the budget rule: build its base with base_config()")
    if side == "autoregembed":
        runs: dict = {f"lr {lr:g}": replace(base, lr=lr) for lr in ALIGN_LRS}
        lr = _phase_two_lr(runs)
        if lr is not None:
            runs[f"JS divergence, lr {lr:g}"] = replace(base, lr=lr, divergence="js")
            runs[f"LoRA, lr {LORA_LR:g}"] = _lora(base)
        return runs
    runs = {f"{BASELINE}, lr {lr:g}": contrastive_config(BASELINE, base, lr=lr) for lr in BASELINE_LRS}
    lr = _phase_two_lr(runs)
    if lr is not None:
        runs[f"last token, in-batch + hard negative, lr {lr:g}"] = contrastive_config(
            "last token, in-batch + hard negative", base, lr=lr)
        runs[f"{BASELINE}, tau 0.02, lr {lr:g}"] = replace(contrastive_config(BASELINE, base, lr=lr),
                                                           temperature=0.02)
    return runs


def search_table(base: AlignConfig) -> pd.DataFrame:
    """Every search run of both sides (stored records only; missing runs listed as not run): the dev signal at
    step 0 and at the selected step, where the run stopped, what it saw, its CPU time, and which run dev selects
    on each side (marked only once that side's whole search is stored: a best-so-far is not a selection)."""
    rows = []
    for side in SIDES:
        for label, config in search_configs(side, base).items():
            record = _record(config)
            row = {"side": side, "run": label, "lr": f"{config.lr:g}", "stored": record is not None}
            if record is not None:
                summary = record["summary"]
                start = budget.evaluations(record["rows"])[0][1]  # the stored record keeps the history as rows
                row.update({"dev at step 0": start, "dev selected": summary["selected_signal"],
                            "selected step": summary["selected_step"], "stopped at": summary["steps"],
                            "stopped early": summary["stopped_early"],
                            "examples at selection": summary["selected_examples_seen"],
                            "CPU hours": summary["train_cpu_seconds"] / 3600})
            rows.append(row)
    table = pd.DataFrame(rows)
    table["selected by dev"] = False  # marked once a side's whole search (both phases) is stored
    for side in SIDES:
        try:
            chosen = selected_config(side, base)
        except LookupError:
            continue
        labels = [label for label, config in search_configs(side, base).items() if config == chosen]
        table.loc[(table.side == side) & table.run.isin(labels), "selected by dev"] = True
    return table


def search_dev_curves(base: AlignConfig) -> pd.DataFrame:
    """The dev signal of every stored search run (side, run, step, validation_sts), for the search figure."""
    rows = [{"side": SIDE_NAMES[side], "run": label, "step": r["step"], "validation_sts": r["validation_sts"]}
            for side in SIDES for label, config in search_configs(side, base).items()
            for r in (_record(config) or {}).get("rows", []) if "validation_sts" in r]
    return pd.DataFrame(rows, columns=["side", "run", "step", "validation_sts"])


def selected_config(side: str, base: AlignConfig) -> AlignConfig | TrainConfig:
    """The dev-selected configuration of ``side`` once its whole search (both phases) is stored."""
    runs = search_configs(side, base)
    records = {label: _record(config) for label, config in runs.items()}
    if len(runs) < 5 or any(r is None for r in records.values()):
        missing = [label for label, r in records.items() if r is None] or ["phase 2"]
        raise LookupError(f"the {side} search is not complete: {', '.join(missing)} not stored")
    return runs[max(records, key=lambda label: _selected(records[label]))]


def selected_sides(base: AlignConfig, sides: Sequence[str] = SIDES, select=None
                   ) -> dict[str, AlignConfig | TrainConfig | None]:
    """Side -> its dev-selected configuration (``select``, default :func:`selected_config`), for ``sides`` only
    (None while a search is not complete): a reader of one side's selection reads nothing of the other's search."""
    select = select or selected_config
    out = {}
    for side in sides:
        try:
            out[side] = select(side, base)
        except LookupError:
            out[side] = None
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description="Run Paper 3's declared dev search (resumable; stored runs are "
                                                 "skipped).")
    parser.add_argument("--side", choices=SIDES, required=True)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--cap", type=int, default=CAP)
    parser.add_argument("--only", nargs="*", help="run only these labels (default: every run defined so far)")
    args = parser.parse_args(argv)
    base = base_config(args.backbone, cap=args.cap)
    done = set()
    while True:  # phase 2 appears once phase 1 is stored
        todo = {label: c for label, c in search_configs(args.side, base).items()
                if label not in done and (not args.only or label in args.only)}
        if not todo:
            break
        for label, config in todo.items():
            spec = ar_train.run_spec(config) if isinstance(config, AlignConfig) else contrastive_train.run_spec(config)
            print(f"=== {label}", flush=True)
            ensure_trained(spec)
            done.add(label)
    print(search_table(base).to_string())


if __name__ == "__main__":
    main()
