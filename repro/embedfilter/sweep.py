"""The EmbedFilter experiment: one encode per backbone x prompt, every filter from the cached states.

For each task of a suite the final (post-norm) state is encoded once with the prompt's pooling
(PromptEOL: last token; Echo: mean over the second copy plus EOS), texts over 512 tokens keep their
first and last halves (the official code keeps the first and last 256 tokens), and every variant
(raw, EmbedFilter types and ratios, baselines) is scored by mteb from those cached states. Results
are stored per task in ``results/embedfilter/`` (a killed run resumes at the first missing task)::

    python -m repro.embedfilter.sweep --backbone smollm2-135m --prompt prompteol --suite compact
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from repro.core.backbones import STORED_DTYPE, LazyBackbone
from repro.core.encode import TOKENIZATIONS, count_tokens
from repro.core.evaluate import evaluate_encoders, states_encoder
from repro.core.samples import task_texts
from repro.core.suites import describe_suite, suite_caps, suite_caps_text
from repro.core.tasks import TASKS, check_task_names, data_fingerprint, suite_task
from repro.embedfilter.filters import (
    PROMPT_POOLING,
    Normalized,
    encode_config,
    filters_for,
    parse_variant,
    sweep_variants,
)
from repro.store.identity import config_identity
from repro.store.results import all_results, decode_array, encode_array, load_covering, load_or_compute, load_result

EXPERIMENT = "embedfilter"
# "mteb": raw embeddings into mteb's evaluators, its main scores (the book's earlier sweeps); "official": as the
# official EmbedFilter evaluation, L2-normalised embeddings for clustering and pair classification (k-means and the
# distance-based pair scores change; STS and retrieval use cosine, classification is left as is) and cosine AP as
# the pair-classification score. Only those two categories get another result key.
PROTOCOLS = ("mteb", "official")
NORMALISED_CATEGORIES = ("Clustering", "PairClassification")  # where L2 normalisation changes an mteb score
# The official scripts L2-normalise for every task but classification with PromptEOL (run4qwen_prompteol.py); the
# Echo scripts take l2_normalize and never use it (run4qwen_echo.py). Pair classification is reported as cosine AP.
NORMALISING_PROMPTS = ("prompteol", "prompteol-summarize")

log = logging.getLogger(__name__)


def mean_scores(scores: pd.DataFrame, by: Sequence[str] = ("backbone", "prompt", "variant")) -> pd.DataFrame:
    """Mean main score x100 over tasks (a task's subsets averaged first), overall and per category."""
    per_task = scores.groupby([*by, "category", "task"], as_index=False)["main_score"].mean()
    per_task["score"] = per_task["main_score"] * 100
    overall = per_task.groupby(list(by))["score"].agg(["mean", "count"]).rename(columns={"mean": "all tasks", "count": "tasks"})
    per_cat = per_task.pivot_table(index=list(by), columns="category", values="score", aggfunc="mean")
    return overall.join(per_cat).reset_index()


def embedfilter_task(backbone, task_name: str, suite: str, prompt: str, variants: Sequence[str] | None = None,
                     seed: int = 0, whiten_sentences: int = 2000, recompute: bool = False,
                     progress: bool = True, protocol: str = "mteb", tokenization: str = "pieces") -> dict:
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol '{protocol}'; valid: {', '.join(PROTOCOLS)}")
    official = protocol == "official" and TASKS[task_name].category in NORMALISED_CATEGORIES
    config = encode_config(backbone, prompt, tokenization=tokenization)
    variants = list(variants or sweep_variants())
    params = {"backbone": backbone.name, "revision": backbone.revision, "attention": backbone.attention,
              "task": task_name, "suite": suite, "caps": describe_suite(suite), "prompt": prompt,
              "encode": config_identity(config) | {"poolings": list(config.poolings), "layers": list(config.layers)},
              "variants": variants, "seed": seed, "whiten_sentences": whiten_sentences,
              "data": data_fingerprint(task_name)}
    if official:
        params["protocol"] = "official"
    if not recompute:  # a sweep stored with more variants answers fewer (a page narrowed to a subset of ratios)
        covering = load_result(EXPERIMENT, params) or load_covering(EXPERIMENT, params, "variants", "variant")
        if covering is not None:
            return covering

    def compute():
        start = time.perf_counter()
        if official and prompt not in NORMALISING_PROMPTS:  # Echo's official scoring: no normalisation, cosine AP
            earlier = embedfilter_task(backbone, task_name, suite, prompt, variants, seed, whiten_sentences, recompute,
                                       progress, "mteb", tokenization)
            rows = pd.DataFrame(earlier["rows"])
            if "cosine_ap" in rows:
                rows = rows.assign(mteb_main_score=rows["main_score"], main_score=rows["cosine_ap"])
            extra = {k: earlier[k] for k in ("matches_mteb", "pair_similarities") if k in earlier}
            return rows, earlier["timings"] | {"derived_from_mteb_record": True}, extra
        maps = filters_for(backbone, config, variants, seed, whiten_sentences, progress)
        if official:
            maps = {name: Normalized(fmap, backbone.hidden_size) for name, fmap in maps.items()}
        build_seconds = time.perf_counter() - start
        pooling = config.poolings[0]
        encoders = [({"variant": name, "dims": fmap.dims if fmap is not None else backbone.hidden_size},
                     states_encoder(backbone, config, pooling, -1, transform=fmap, label=f"{backbone.name}-{prompt}-{name}",
                                   progress=progress and i == 0))
                    for i, (name, fmap) in enumerate(maps.items())]
        sims: dict = {}
        rows = evaluate_encoders([suite_task(task_name, suite)], encoders, progress=progress,
                                 pair_similarities=sims, desc=prompt)
        if official and "cosine_ap" in rows:
            rows = rows.assign(mteb_main_score=rows["main_score"], main_score=rows["cosine_ap"])
        timings = {"task_seconds": time.perf_counter() - start, "filter_build_seconds": build_seconds,
                   "tokens_upper_bound": count_tokens(backbone, task_texts(task_name, suite), config)}
        extra = {"matches_mteb": TASKS[task_name].matches_mteb}
        if sims:
            extra["pair_similarities"] = {variant: encode_array(values) for (_, variant, _dims), values in sims.items()}
        return rows, timings, extra

    return load_or_compute(EXPERIMENT, params, compute, recompute=recompute)


def embedfilter(backbone_name: str = "smollm2-135m", suite: str = "compact", prompt: str = "prompteol",
                tasks: Sequence[str] | None = None, variants: Sequence[str] | None = None, seed: int = 0,
                whiten_sentences: int = 2000, recompute: bool = False, progress: bool = True,
                protocol: str = "mteb", tokenization: str = "pieces") -> pd.DataFrame:
    """Scores per (task, variant) for one backbone and prompt (``protocol``: see :data:`PROTOCOLS`;
    ``tokenization``: "pieces" or "official", :class:`repro.core.encode.EncodeConfig`)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol '{protocol}'; valid: {', '.join(PROTOCOLS)}")
    suite_caps(suite)
    tasks = check_task_names(tasks, suite)
    for v in variants or []:
        parse_variant(v)
    backbone = LazyBackbone(backbone_name, dtype=STORED_DTYPE)  # loaded only if a task is not stored
    encode_config(backbone, prompt, tokenization=tokenization)
    frames = []
    for name in tasks:
        record = embedfilter_task(backbone, name, suite, prompt, variants, seed, whiten_sentences, recompute, progress,
                                  protocol, tokenization)
        frame = pd.DataFrame(record["rows"])
        frame["backbone"], frame["prompt"], frame["protocol"] = backbone_name, prompt, protocol
        frame["tokenization"] = tokenization
        frames.append(frame)
        if progress:
            log.info("%s %s %s: done (%.0f s)", backbone_name, prompt, name, record["timings"]["task_seconds"])
    return pd.concat(frames, ignore_index=True)


def parse_run(text: str) -> tuple[str, str]:
    """``"backbone:prompt"`` (a notebook parameter) -> ``(backbone, prompt)``, checked."""
    backbone, sep, prompt = str(text).partition(":")
    if not sep or not backbone or prompt not in PROMPT_POOLING:
        raise ValueError(f"a sweep run is 'backbone:prompt' with prompt one of {', '.join(PROMPT_POOLING)}; got {text!r}")
    return backbone, prompt


def sweep_scores(runs: Sequence[tuple[str, str]], suite: str, tasks: Sequence[str] | None,
                 variants: Sequence[str], recompute: bool = False, tokenization: str = "pieces",
                 protocol: str = "mteb") -> pd.DataFrame:
    """The sweeps of several (backbone, prompt) runs on the same tasks, one frame (empty if no runs); under the
    official ``protocol`` the categories it rescores (clustering, pair classification) come from its records and
    the others from mteb's, which it leaves as they are."""
    frames = [embedfilter(b, suite, p, tasks, variants, recompute=recompute, progress=False, protocol=protocol,
                          tokenization=tokenization) for b, p in runs]
    if not frames:
        return pd.DataFrame(columns=["backbone", "prompt", "task", "category", "variant", "dims", "main_score"])
    return pd.concat(frames, ignore_index=True)


def describe_sweep(scores: pd.DataFrame, suite: str, label: str = "Scale") -> str:
    """The scale line printed under every EmbedFilter result: runs, suite caps, tasks per category."""
    runs = ", ".join(f"{b}/{p}" for b, p in scores[["backbone", "prompt"]].drop_duplicates().itertuples(index=False))
    n_tasks = scores.groupby("category")["task"].nunique()
    return (f"{label}: {runs}; suite '{suite}' ({suite_caps_text(suite)}); {scores.task.nunique()} tasks "
            f"({', '.join(f'{c}: {n}' for c, n in n_tasks.items())}); final-layer state, fp32, 2 CPU cores; "
            "scores are mteb main scores x100.")


def stored_scores(suite: str = "compact", protocol: str = "mteb", tokenization: str = "pieces") -> pd.DataFrame:
    """Every stored EmbedFilter row of a suite under one scoring protocol (:data:`PROTOCOLS`; the official one
    exists for clustering and pair classification only) and one tokenization, with backbone and prompt columns."""
    frames = []

    def wanted(p: dict) -> bool:
        return (p["suite"] == suite and p["data"] == data_fingerprint(p["task"])
                and p.get("protocol", "mteb") == protocol and p["encode"].get("tokenization", "pieces") == tokenization)

    for record in all_results(EXPERIMENT, where=wanted):
        p = record["params"]
        frame = pd.DataFrame(record["rows"])
        frame["backbone"], frame["prompt"] = p["backbone"], p["prompt"]
        frame["task_seconds_total"] = record["timings"]["task_seconds"]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def protocol_comparison(suite: str = "compact", variants: Sequence[str] = ("raw", "edge/2"),
                        tokenization: str = "pieces", runs: Sequence[tuple[str, str]] | None = None) -> pd.DataFrame:
    """Clustering and pair classification scored both ways, where the official protocol was run (one
    tokenization; ``runs``: only these (backbone, prompt) runs, e.g. a page's grid): mteb's main score on raw
    embeddings against the official scoring (PromptEOL L2-normalised, Echo not; cosine AP for pair
    classification), x100, and the EmbedFilter gain (edge/2 - raw) under each."""
    official = stored_scores(suite, "official", tokenization)
    if runs is not None and len(official):
        official = official[[(b, p) in set(runs) for b, p in zip(official.backbone, official.prompt)]]
    if official.empty:
        return pd.DataFrame()
    earlier = stored_scores(suite, "mteb", tokenization)
    keys = ["backbone", "prompt", "task", "variant"]
    both = official[keys + ["main_score"]].merge(earlier[keys + ["main_score"]], on=keys, suffixes=(" official", " mteb"))
    both = both[both.variant.isin(variants)]
    table = both.pivot_table(index=["backbone", "prompt", "task"], columns="variant",
                             values=["main_score mteb", "main_score official"]) * 100
    table.columns = [f"{variant}, {'official' if 'official' in kind else 'mteb'}" for kind, variant in table.columns]
    if {"raw", "edge/2"} <= set(variants):
        for how in ("mteb", "official"):
            table[f"edge/2 gain, {how}"] = table[f"edge/2, {how}"] - table[f"raw, {how}"]
    return table.reset_index()


def stored_pair_similarities(suite: str = "compact", tokenization: str = "pieces"
                             ) -> dict[tuple[str, str, str, str], np.ndarray]:
    """(backbone, prompt, task, variant) -> per-pair cosine similarities of the STS tasks (one tokenization)."""
    out = {}

    def wanted(p: dict) -> bool:  # never pair stale data with gold
        return (p["encode"].get("tokenization", "pieces") == tokenization and p["suite"] == suite
                and p["data"] == data_fingerprint(p["task"]))

    for record in all_results(EXPERIMENT, where=wanted):
        p = record["params"]
        for variant, blob in record.get("pair_similarities", {}).items():
            out[(p["backbone"], p["prompt"], p["task"], variant)] = decode_array(blob)
    return out


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--prompt", default="prompteol", choices=sorted(PROMPT_POOLING))
    parser.add_argument("--suite", default="compact")
    parser.add_argument("--tasks", nargs="*")
    parser.add_argument("--variants", nargs="*", help="default: raw, edge/1,2,4,8 and every type/baseline at 2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--recompute", action="store_true")
    parser.add_argument("--protocol", default="mteb", choices=PROTOCOLS,
                        help="official: L2-normalised embeddings for clustering and pair classification, cosine AP")
    parser.add_argument("--tokenization", default="pieces", choices=TOKENIZATIONS,
                        help="official: the filled PromptEOL template in one call, Echo with BOS and 512-token copies "
                             "(EmbedFilter's official scripts); pieces: the book's earlier runs")
    args = parser.parse_args(argv)
    df = embedfilter(args.backbone, args.suite, args.prompt, args.tasks, args.variants, args.seed,
                     recompute=args.recompute, protocol=args.protocol, tokenization=args.tokenization)
    print(df.groupby("variant")["main_score"].mean().sort_values().to_string())


if __name__ == "__main__":
    main()


def grid_runs(backbones: Sequence[str], prompts: Sequence[str], skip_runs: Sequence[str] = ()
              ) -> list[tuple[str, str]]:
    """The backbone x prompt runs of a sweep page's grid, less ``skip_runs`` ("backbone:prompt", checked)."""
    skipped = [parse_run(r) for r in skip_runs]
    return [(b, p) for b in backbones for p in prompts if (b, p) not in skipped]


def page_sweep(backbones: Sequence[str], prompts: Sequence[str], skip_runs: Sequence[str], suite: str,
               tasks: Sequence[str] | None, ratios: Sequence[int], recompute: bool = False,
               tokenization: str = "pieces", label: str = "Scale"
               ) -> tuple[list[tuple[str, str]], list[str], pd.DataFrame, str]:
    """The sweep pages' common setup: the backbone x prompt grid less ``skip_runs`` ("backbone:prompt"), the
    variants of ``ratios``, their stored (or computed) scores and the sentence of the page's Scale box (``label``
    leads it). Returns (runs, variants, scores, scale)."""
    variants = sweep_variants(ratios)
    runs = grid_runs(backbones, prompts, skip_runs)
    scores = sweep_scores(runs, suite, tasks, variants, recompute, tokenization=tokenization)
    scale = (describe_sweep(scores, suite, label=label) + f" Tokenization: {tokenization}."
             + (f" Left out of the grid (not computed yet): {', '.join(skip_runs)}." if skip_runs else ""))
    return runs, variants, scores, scale
