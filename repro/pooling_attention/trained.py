"""Tang & Yang's five models trained with the same settings and scored on a suite (Tables 2-5).

    repro train --model 5 --steps 150 --batch-size 16 --suite compact
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import pandas as pd

from repro.store.lanes import in_lane_order
from repro.training.cli import add_config_arguments
from repro.training.contrastive import TrainConfig
from repro.training.evaluation import evaluate_trained


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
    parser.add_argument("--recompute-stale", action="store_true",
                        help="recompute the stored scores that come from other weights than the local run folder's "
                             "(e.g. the weights were lost and retrained on another machine)")
    args = vars(parser.parse_args(argv))
    suite, tasks, stale = args.pop("suite"), args.pop("tasks"), args.pop("recompute_stale")
    df = evaluate_trained(TrainConfig(**args), suite, tasks, recompute_stale=stale)
    print(df.groupby("task")["main_score"].mean().to_string())


if __name__ == "__main__":
    main()
