"""Per-layer scores of a backbone on a suite: every layer's pooled state used as the embedding.

Stored per task in ``results/layerwise/`` (so a killed run resumes at the first missing task; the
encoder cache resumes inside a task). Run from the command line::

    python -m repro.pooling_attention.layerwise --backbone smollm2-135m --suite standard --prompt none

"""

from __future__ import annotations

import argparse
import logging
import time

import pandas as pd

from repro.core.backbones import STORED_DTYPE, LazyBackbone
from repro.core.encode import EncodeConfig, count_tokens
from repro.core.evaluate import evaluate_layers
from repro.core.samples import task_texts
from repro.core.suites import describe_suite, suite_caps
from repro.core.tasks import TASKS, check_task_names, data_fingerprint, suite_task
from repro.store.identity import config_identity
from repro.store.results import all_results, decode_array, encode_array, load_or_compute

EXPERIMENT = "layerwise"

log = logging.getLogger(__name__)


def layerwise_task(backbone, task_name: str, suite: str, config: EncodeConfig, layers: list[int] | None = None,
                   recompute: bool = False, progress: bool = True) -> dict:
    """Scores of the given layers (default: all) for one task; all layers are encoded (one forward) and
    cached either way, so scoring more layers later costs no encoding."""
    params = {"backbone": backbone.name, "revision": backbone.revision, "attention": backbone.attention,
              "task": task_name, "suite": suite, "caps": describe_suite(suite), "encode": config_identity(config) | {
                  "poolings": list(config.poolings), "layers": list(config.layers) if config.layers else None},
              "data": data_fingerprint(task_name), "scored_layers": layers}

    def compute():
        start = time.perf_counter()
        sims: dict = {}
        rows = evaluate_layers(backbone, [suite_task(task_name, suite)], config, layers=layers,
                               progress=progress, pair_similarities=sims)
        seconds = time.perf_counter() - start
        timings = {"task_seconds": seconds,
                   "tokens_upper_bound": count_tokens(backbone, task_texts(task_name, suite), config)}
        extra = {"matches_mteb": TASKS[task_name].matches_mteb}
        if sims:  # STS: per-pair cosine similarities (float16, base64) for paired tests over pairs
            extra["pair_similarities"] = {f"{layer}:{pooling}": encode_array(values)
                                          for (_, layer, pooling), values in sims.items()}
        return rows, timings, extra

    return load_or_compute(EXPERIMENT, params, compute, recompute=recompute)


def pair_similarities(record: dict, layer: int, pooling: str):
    """Per-pair cosine similarities stored with an STS layerwise result (None if not stored)."""
    blob = record.get("pair_similarities", {}).get(f"{layer}:{pooling}")
    return None if blob is None else decode_array(blob)


def stored_records(backbone_name: str, suite: str) -> dict[str, dict]:
    """The stored layerwise record per task for a backbone and suite (the one scoring most layers)."""

    best: dict[str, dict] = {}
    for record in all_results(EXPERIMENT, where=lambda p: p["backbone"] == backbone_name and p["suite"] == suite):
        p = record["params"]
        n = len(p.get("scored_layers") or [])
        if p["task"] not in best or n > len(best[p["task"]]["params"].get("scored_layers") or []):
            best[p["task"]] = record
    return best


def compute_time(backbone_name: str, suite: str) -> pd.DataFrame:
    """Seconds per task spent encoding and scoring, from every stored record of a backbone and suite.

    A record's first mteb call includes the encoding when the states were not cached yet; its
    encoding time is estimated as that call minus the record's median call. A task's encoding time is
    the largest such estimate over its records (the run that encoded it); its scoring time is the sum of
    the calls of the record that scored the most layers, minus any encoding in it."""

    per_record = []
    for record in all_results(EXPERIMENT, where=lambda p: p["backbone"] == backbone_name and p["suite"] == suite):
        p = record["params"]
        df = pd.DataFrame(record["rows"])
        calls = df.groupby(["layer", "pooling"], sort=False).agg(seconds=("seconds", "first"),
                                                                 first=("first_call_includes_encoding", "any"))
        encoding = max(float(calls.loc[calls["first"], "seconds"].sum() - calls["seconds"].median()), 0.0)
        per_record.append({"task": p["task"], "layers": len(p.get("scored_layers") or []) or len(calls) // 2,
                           "encode_seconds": encoding, "score_seconds": float(calls["seconds"].sum()) - encoding})
    if not per_record:
        return pd.DataFrame(columns=["task", "encode_seconds", "score_seconds"])
    frame = pd.DataFrame(per_record)
    encode = frame.groupby("task")["encode_seconds"].max()
    score = frame.loc[frame.groupby("task")["layers"].idxmax()].set_index("task")["score_seconds"]
    return pd.DataFrame({"encode_seconds": encode, "score_seconds": score}).reset_index()


def layerwise(backbone_name: str = "smollm2-135m", suite: str = "standard", prompt: str = "none",
              tasks: list[str] | None = None, attention: str = "causal", max_length: int = 512,
              layers: list[int] | None = None, recompute: bool = False, progress: bool = True,
              layer_step: int | None = None) -> pd.DataFrame:
    """Scores per (task, layer, pooling). ``layers``: indices to score (negative count from the end);
    ``layer_step``: score every step-th layer plus the last (ignored when ``layers`` is given)."""
    suite_caps(suite)
    tasks = check_task_names(tasks, suite)
    backbone = LazyBackbone(backbone_name, attention, STORED_DTYPE)  # loaded only if a task is not stored
    config = EncodeConfig(prompt=prompt, max_length=max_length)
    if layers is None:  # every layer_step-th layer plus the last; all layers by default
        layer_step = 1 if layer_step is None else layer_step
        if not isinstance(layer_step, int) or isinstance(layer_step, bool) or layer_step < 1:
            raise ValueError(f"layer_step must be a positive integer, got {layer_step!r}")
        layers = sorted(set(range(0, backbone.num_layers + 1, layer_step)) | {backbone.num_layers})
    if layers is not None:  # negative indices count from the end (-1 = the final, post-norm state)
        layers = sorted({x if x >= 0 else backbone.num_layers + 1 + x for x in layers})
    frames = []
    for name in tasks:
        record = layerwise_task(backbone, name, suite, config, layers, recompute=recompute, progress=progress)
        frame = pd.DataFrame(record["rows"])
        frame["task_seconds_total"] = record["timings"]["task_seconds"]
        frames.append(frame)
        if progress:
            log.info("%s: done (%.0f s)", name, record["timings"]["task_seconds"])
    return pd.concat(frames, ignore_index=True)


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--suite", default="standard")
    parser.add_argument("--prompt", default="none")
    parser.add_argument("--attention", default="causal")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--tasks", nargs="*")
    parser.add_argument("--layers", nargs="*", type=int,
                        help="layers to score (default: all; -1 = the last). All layers are encoded anyway.")
    parser.add_argument("--recompute", action="store_true")
    args = parser.parse_args(argv)
    df = layerwise(args.backbone, args.suite, args.prompt, args.tasks, args.attention, args.max_length,
                   args.layers, args.recompute)
    best = df.loc[df.groupby(["task", "pooling"])["main_score"].idxmax(), ["task", "pooling", "layer", "main_score"]]
    print(best.to_string(index=False))


if __name__ == "__main__":
    main()
