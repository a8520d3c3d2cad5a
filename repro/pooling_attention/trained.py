"""Train-or-load a model and evaluate it on a suite, with everything the book needs stored in ``results/``.

* :func:`train_or_load`: the run folder ``runs/<name>`` (adapter + head + checkpoints, not committed:
  reproducible by the same command) is trained, resumed or just loaded; its training summary (config,
  curves, examples and tokens seen, seconds) is stored in ``results/trained_runs/``.
* :func:`evaluate_trained`: mteb scores per task of the trained model (STS keeps per-pair similarities),
  stored in ``results/trained_scores/`` keyed by the full training config, the suite and the task.

    python -m repro.pooling_attention.trained --model 5 --steps 200 --suite compact
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from repro.core.evaluate import (
    CosineSimilarity,
    model_meta,
    texts_from,
    evaluate_encoders,
)
from repro.core.tasks import (
    check_task_names,
    data_fingerprint,
    describe_suite,
    offline_task,
    suite_caps,
)
from repro.store.lanes import exclusive, in_lane_order
from repro.store.paths import REPO_ROOT
from repro.store.results import all_results, encode_array, load_or_compute, load_result
from repro.training.cli import add_config_arguments
from repro.training.contrastive import (
    Collator,
    TrainConfig,
    embed_texts,
    load_trained,
    train,
)

RUNS_EXPERIMENT = "trained_runs"
SCORES_EXPERIMENT = "trained_scores"


def runs_dir() -> Path:
    import os

    folder = Path(os.environ.get("REPRO_RUNS_DIR", REPO_ROOT / "runs")).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def run_name(config: TrainConfig) -> str:
    from repro.store.results import params_key

    short = Path(config.backbone).name if "/" in config.backbone else config.backbone
    return f"{short}-model{config.model}-{params_key(config.identity()).rsplit('-', 1)[-1]}"


def weights_digest(model) -> str:
    """sha256 of the trained weights (adapter + head): identifies which training produced a score."""
    from repro.store.fingerprint import weights_digest as digest

    return digest(model, lambda name, _: "lora_" in name or name.startswith("head."))


def train_run_once(folder: Path, experiment: str, params: dict, train_here: Callable[[], object], weights_file: str,
                   recompute: bool = False) -> dict:
    """Train the run in ``folder`` once and store its record (summary + history) under ``params``: trains (or
    resumes) it unless its ``summary.json`` exists, and again if the record is stored but this machine lacks
    ``final/<weights_file>`` (same data, same seed). Holds the lock ``run <folder>``, so another lane that
    wants this run waits for it instead of training it too; the lock covers the re-checks of the record and
    of the weights, not only the training."""

    def compute():
        if not (folder / "summary.json").is_file():
            train_here()
        summary = json.loads((folder / "summary.json").read_text())
        history = pd.DataFrame(summary.pop("history"))
        return history, {"train_seconds": summary["train_seconds"]}, {"summary": summary}

    with exclusive(f"run {folder}"):
        record = load_or_compute(experiment, params, compute, recompute=recompute)
        if not (folder / "final" / weights_file).is_file():
            train_here()  # results stored but weights missing on this machine: retrain
    return record


def train_or_load(config: TrainConfig, progress: bool = True, refresh_record: bool = False):
    """The trained model for ``config`` (training or resuming it if needed) and its stored summary.
    ``refresh_record`` re-stores the summary (curves) from the local run folder: used when stale scores are
    recomputed with weights retrained here, so that curves and scores describe the same training."""
    folder = runs_dir() / run_name(config)
    record = train_run_once(folder, RUNS_EXPERIMENT, {"train": config.identity()},
                            lambda: train(config, folder, progress=progress), "train_config.json",
                            recompute=refresh_record)
    model, loaded = load_trained(folder / "final")
    if loaded != config:
        raise ValueError(f"{folder} holds a model trained with another configuration")
    return model, record


class TrainedEncoder(CosineSimilarity):
    """mteb encoder over a trained :class:`repro.training.contrastive.EmbeddingModel` (L2-normalised embeddings)."""

    def __init__(self, model, config: TrainConfig):
        self.model, self.config = model, config
        self.collate = Collator(model.backbone.tokenizer, config)
        self.mteb_model_meta = model_meta(f"repro-trained-model{config.model}", "local", model.backbone.hidden_size)

    def encode(self, inputs, **kwargs) -> np.ndarray:
        return embed_texts(self.model, self.collate, texts_from(inputs))


def evaluate_trained(config: TrainConfig, suite: str, tasks: Sequence[str] | None = None, eval_max_length: int = 512,
                     progress: bool = True, recompute: bool = False, recompute_stale: bool = False) -> pd.DataFrame:
    """Scores of the trained model per task (stored per task; trains/loads the model only if needed).
    ``recompute_stale``: recompute the tasks whose stored scores come from other weights than the model at hand
    (weights lost and retrained: CPU training is not bit-reproducible across machines)."""

    def make_encoder():
        model, _ = train_or_load(config, progress, refresh_record=recompute_stale)
        eval_config = TrainConfig(**(asdict(config) | {"max_length": eval_max_length}))
        return TrainedEncoder(model, eval_config), weights_digest(model)

    frame = evaluate_per_task(SCORES_EXPERIMENT, {"train": config.identity(), "eval_max_length": eval_max_length},
                              suite, tasks, make_encoder, progress, recompute, label=f"model {config.model}",
                              recompute_stale=recompute_stale)
    return frame.assign(model=config.model)


def evaluate_per_task(experiment: str, identity: dict, suite: str, tasks: Sequence[str] | None, make_encoder,
                      progress: bool = True, recompute: bool = False, label: str = "",
                      recompute_stale: bool = False) -> pd.DataFrame:
    """mteb scores of one trained encoder, stored per task under ``identity`` + suite + task (STS keeps its
    per-pair similarities). ``make_encoder() -> (mteb encoder, weights digest)`` runs only if a task is
    missing (or, with ``recompute_stale``, always: then every task stored from other weights is recomputed);
    scores from two different trainings (digests) are never mixed in one table."""
    suite_caps(suite)
    tasks = check_task_names(tasks)
    state: dict = {}
    if recompute_stale:
        state["encoder"], state["weights"] = make_encoder()
    digests: set = set()
    frames = []
    for name in tasks:
        params = {**identity, "suite": suite, "caps": describe_suite(suite), "task": name,
                  "data": data_fingerprint(name)}

        def compute(name=name):
            if "encoder" not in state:
                state["encoder"], state["weights"] = make_encoder()
            start = time.perf_counter()
            sims: dict = {}
            rows = evaluate_encoders([offline_task(name, suite)], [({}, state["encoder"])], progress=False,
                                     pair_similarities=sims)
            extra = {"weights_sha256": state["weights"]}
            if sims:
                extra["pair_similarities"] = encode_array(next(iter(sims.values())))
            return rows, {"task_seconds": time.perf_counter() - start}, extra

        stale = recompute_stale and (load_result(experiment, params) or {}).get("weights_sha256") != state["weights"]
        record = load_or_compute(experiment, params, compute, recompute=recompute or stale)
        digests.add(record.get("weights_sha256"))
        frames.append(pd.DataFrame(record["rows"]).assign(weights_sha256=record.get("weights_sha256")))
        if progress:
            print(f"{label} {name}: {frames[-1]['main_score'].mean():.4f}", flush=True)
    if len(digests) > 1:  # e.g. weights lost and retrained: never mix two trainings in one table
        raise ValueError(f"the stored scores of {label} come from different trained weights "
                         f"({sorted(map(str, digests))}); rerun with recompute_stale=True "
                         f"(python -m repro.pooling_attention.trained ... --recompute-stale) to recompute those from other weights")
    return pd.concat(frames, ignore_index=True)


def evaluate_models(backbone: str, models: Sequence[int], suite: str, tasks: Sequence[str] | None = None,
                    recompute: bool = False, progress: bool = False, **train) -> pd.DataFrame:
    """Scores of several of the five models trained with the same settings ``train`` (TrainConfig fields),
    one frame with columns ``model`` and ``backbone``."""
    frames = in_lane_order({m: lambda m=m: evaluate_trained(TrainConfig(backbone=backbone, model=m, **train), suite,
                                                            tasks, progress=progress, recompute=recompute)
                            for m in models})
    return pd.concat(frames.values(), ignore_index=True).assign(backbone=backbone)


def stored_runs(backbone: str) -> list[dict]:
    return [r for r in all_results(RUNS_EXPERIMENT) if r["params"]["train"]["backbone"] == backbone]


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
