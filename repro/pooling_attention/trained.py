"""Tang & Yang's five models trained with the same settings and scored on a suite (Tables 2-5).

    repro train --model 5 --steps 150 --batch-size 16 --suite compact          # a fixed budget (earlier runs)
    repro train --converged --model 5 --seed 1 --suite compact --budget-points  # the declared budget rule
    repro train --converged --model 1 --seed 1 --prompt prompteol               # PromptEOL as the input format

``--converged`` trains under the declared rule (:func:`converged_config`): the Paper 1 mix, a 600-step cap,
constant learning rate, early stopping and selection on STS-B dev; ``--budget-points`` also scores the run's
log-spaced budget checkpoints on the ``small`` suite.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from repro.pooling_attention.instructions import TANG_YANG
from repro.store.lanes import in_lane_order
from repro.training.budget import under_budget_rule
from repro.training.cli import add_config_arguments
from repro.training.contrastive import TrainConfig
from repro.training.evaluation import evaluate_budget_points, evaluate_trained

CAP = 600  # steps x 16 examples (~9.6k examples)


def converged_config(backbone: str = "smollm2-135m", model: int | str = 1, seed: int = 0, cap: int = CAP,
                     data: str = "mix", **overrides) -> TrainConfig:
    """One of the five designs (or a contrastive baseline) trained under the declared budget rule
    (:mod:`repro.training.budget`): batch 16, max length 64, LoRA r16 without dropout, lr 2e-4 constant after 20
    warm-up steps, padding-free packing, every training row used (the dev signal is STS-B dev, so no rows are
    held out). ``data``: the Paper 1 mix (SNLI + MEDI NLI triplets, MRPC and QA pairs)."""
    base = TrainConfig(backbone=backbone, model=model, seed=seed, data=data, batch_size=16, max_length=64,
                       lr=2e-4, warmup_steps=20, lora_dropout=0.0, packing=True, validation_triplets=0)
    return under_budget_rule(replace(base, **overrides), cap)


def evaluate_models(backbone: str, models: Sequence[int], suite: str, tasks: Sequence[str] | None = None,
                    recompute: bool = False, progress: bool = False, **train) -> pd.DataFrame:
    """Scores of several of the five models trained with the same settings ``train`` (TrainConfig fields),
    one frame with columns ``model`` and ``backbone``."""
    frames = in_lane_order({m: lambda m=m: evaluate_trained(TrainConfig(backbone=backbone, model=m, **train), suite,
                                                            tasks, progress=progress, recompute=recompute)
                            for m in models})
    return pd.concat(frames.values(), ignore_index=True).assign(backbone=backbone)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_arguments(parser, TrainConfig)
    parser.add_argument("--suite", default="compact")
    parser.add_argument("--tasks", nargs="*")
    parser.add_argument("--converged", action="store_true",
                        help="train under the declared budget rule (converged_config: mix, cap 600, dev stopping); "
                             "only --backbone, --model, --seed and --prompt are read from the other options")
    parser.add_argument("--instructions", action="store_true",
                        help="also score with Tang & Yang's task instructions before the query-side texts")
    parser.add_argument("--budget-points", action="store_true",
                        help="also score the run's log-spaced budget checkpoints on the small suite (on --tasks)")
    parser.add_argument("--recompute-stale", action="store_true",
                        help="recompute the stored scores that come from other weights than the local run folder's "
                             "(e.g. the weights were lost and retrained on another machine)")
    args = vars(parser.parse_args(argv))
    suite, tasks, stale = args.pop("suite"), args.pop("tasks"), args.pop("recompute_stale")
    converged, points, instructed = args.pop("converged"), args.pop("budget_points"), args.pop("instructions")
    config = (converged_config(args["backbone"], args["model"], args["seed"], prompt=args["prompt"]) if converged
              else TrainConfig(**args))
    df = evaluate_trained(config, suite, tasks, recompute_stale=stale)
    print(df.groupby("task")["main_score"].mean().to_string())
    if instructed:
        df = evaluate_trained(config, suite, tasks, instructions=TANG_YANG)
        print(df.groupby("task")["main_score"].mean().to_string())
    if points:
        curve = evaluate_budget_points(config, tasks=tasks)
        print(curve.groupby(["budget_step", "task"])["main_score"].mean().unstack(0).to_string())


if __name__ == "__main__":
    main()
