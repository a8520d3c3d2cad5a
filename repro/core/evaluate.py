"""Evaluate encoders with mteb's own evaluators and turn the results into tidy pandas rows.

:class:`MtebEncoder` is the one mteb 2 encoder: it wraps any :class:`repro.core.embedder.Embedder`;
:func:`states_encoder` serves one layer and one pooling of the cached all-layer states, so evaluating every
layer costs one forward pass per text set. Scores always come from ``mteb.evaluate`` (never re-implemented metrics), with
``cache=None`` so that mteb's own result cache can never return another encoder's scores.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from repro.core.backbones import Backbone
from repro.core.embedder import Embedder, MappedEmbedder, StatesEmbedder
from repro.core.encode import EncodeConfig
from repro.core.paired import task_units
from repro.core.tasks import TASKS


def model_meta(name: str, revision: str, dim: int):
    # mteb is imported where it is used: pages that only read stored results never import it (3 s)
    from mteb.models.model_meta import ModelMeta

    return ModelMeta.create_empty(overwrites=dict(
        name=f"repro/{name}".replace(" ", "_"), revision=revision, embed_dim=dim,
        similarity_fn_name="cosine", framework=["PyTorch"], languages=["eng-Latn"],
    ))


def texts_from(inputs) -> list[str]:
    texts: list[str] = []
    for batch in inputs:
        texts.extend(batch["text"])
    return texts


class CosineSimilarity:
    """mteb's cosine similarity functions, for every encoder of this project."""

    def similarity(self, a, b):
        from mteb.similarity_functions import cos_sim

        return cos_sim(a, b)

    def similarity_pairwise(self, a, b):
        from mteb.similarity_functions import pairwise_cos_sim

        return pairwise_cos_sim(a, b)


class MtebEncoder(CosineSimilarity):
    """The one mteb 2 encoder of the project: any :class:`repro.core.embedder.Embedder` (retrieval documents
    get ``role="document"``, everything else ``role="query"``), with cosine similarity."""

    def __init__(self, embedder: Embedder, label: str | None = None, revision: str = "local",
                 instructions: dict[str, str] | None = None):
        if not isinstance(embedder, Embedder):
            raise TypeError(f"MtebEncoder wraps an Embedder, got {type(embedder).__name__}")
        self.embedder = embedder
        self.instructions = instructions
        self.mteb_model_meta = model_meta(label or embedder.identity, revision, embedder.dim)

    def instruction_for(self, task_metadata, role: str) -> str | None:
        """The task's instruction for a query-side text (``instructions`` keyed by our or mteb's task name);
        documents never get one."""
        if self.instructions is None or role == "document":
            return None
        name = getattr(task_metadata, "name", None)
        source = _source_for(name) if name else None
        key = source.name if source else name
        if key not in self.instructions:
            raise KeyError(f"no instruction for task {name!r}")
        return self.instructions[key]

    def encode(self, inputs, *, task_metadata=None, hf_split=None, hf_subset=None, prompt_type=None,
               **kwargs) -> np.ndarray:
        role = "document" if getattr(prompt_type, "value", prompt_type) == "document" else "query"
        return self.embedder.encode(texts_from(inputs), role=role, instruction=self.instruction_for(task_metadata,
                                                                                                   role))


def states_encoder(backbone: Backbone, config: EncodeConfig, pooling: str = "last", layer: int = -1,
                   transform=None, label: str | None = None, progress: bool = False) -> MtebEncoder:
    """:class:`MtebEncoder` over one layer and pooling of the cached states, optionally through ``transform``
    (a linear map on the cached states, e.g. an EmbedFilter projection)."""
    states = StatesEmbedder(backbone, config, pooling, layer, progress=progress)
    embedder = states if transform is None else MappedEmbedder(states, transform, label or "map")
    return MtebEncoder(embedder, label or f"{backbone.name}-{config.prompt}-{pooling}-L{states.layer}", backbone.revision)


def run_mteb(model, tasks: Sequence, **kwargs) -> pd.DataFrame:
    """``mteb.evaluate`` (no result cache) -> one row per task/split/subset with the main score."""

    import mteb

    start = time.perf_counter()
    result = mteb.evaluate(model, list(tasks), cache=None, show_progress_bar=False,
                           encode_kwargs={"batch_size": 256, "show_progress_bar": False}, **kwargs)
    rows = tidy(result)
    rows["eval_seconds_total"] = time.perf_counter() - start
    return rows


def tidy(result) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for task_result in result.task_results:
        name = task_result.task_name
        source = _source_for(name)
        for split, subsets in task_result.scores.items():
            for scores in subsets:
                rows.append({
                    "task": source.name if source else name,
                    "category": source.category if source else None,
                    "split": split,
                    "subset": scores.get("hf_subset"),
                    "main_score": float(scores["main_score"]) if scores.get("main_score") is not None else np.nan,
                    "evaluation_time": task_result.evaluation_time,
                    **({"cosine_ap": float(scores["cosine_ap"])} if scores.get("cosine_ap") is not None else {}),
                })
    return pd.DataFrame(rows)


def _source_for(mteb_name: str):
    for source in TASKS.values():
        if mteb_name in (source.name, source.mteb_name):
            return source
    return None


def prediction_record(prediction_folder) -> dict:
    """The one prediction file mteb wrote to ``prediction_folder``."""
    files = list(Path(prediction_folder).glob("*.json"))
    if len(files) != 1:
        raise RuntimeError(f"expected one mteb prediction file in {prediction_folder}, found {len(files)}")
    return json.loads(files[0].read_text())


def sts_pair_similarities(prediction_folder) -> np.ndarray:
    """The per-pair cosine similarities mteb's STS evaluator wrote to its prediction file."""

    record = prediction_record(prediction_folder)
    subsets = [v for k, v in record.items() if k != "mteb_model_meta"]
    return np.asarray(subsets[0]["test"]["cosine_scores"], dtype=np.float32)


def evaluate_encoders(tasks: Iterable, encoders: Sequence[tuple[dict, Any]], *, progress: bool = True,
                      pair_similarities: dict | None = None, desc: str = "",
                      units: dict | None = None) -> pd.DataFrame:
    """Every encoder on every task; rows carry each encoder's ``labels`` (e.g. layer and pooling).

    Tasks are the outer loop, so the in-memory states a task's first encoder computed are reused by
    the others (they all read :func:`repro.core.encode.encode`'s memo). ``pair_similarities`` (a dict,
    filled in place): for STS tasks, mteb's per-pair cosine similarities keyed
    ``(task, *labels.values())``, for paired tests over pairs. ``units`` (a dict, filled in place): for the
    other categories, the per-unit record of :func:`repro.core.paired.task_units` (per-query nDCG@10,
    per-example correctness, ...), same keys.
    """

    frames = []
    for task in tasks:
        task_start = time.perf_counter()
        for position, (labels, encoder) in enumerate(tqdm(encoders, desc=f"{task.metadata.name} {desc}".strip(),
                                                          disable=not progress, leave=False)):
            t0 = time.perf_counter()
            if pair_similarities is not None and task.metadata.type == "STS":
                with tempfile.TemporaryDirectory() as folder:
                    rows = run_mteb(encoder, [task], prediction_folder=folder)
                    key = (rows["task"].iloc[0], *labels.values())
                    pair_similarities[key] = sts_pair_similarities(folder)
            elif units is not None and hasattr(task, "repro_source"):
                with tempfile.TemporaryDirectory() as folder:
                    rows = run_mteb(encoder, [task], prediction_folder=folder)
                    key = (rows["task"].iloc[0], *labels.values())
                    units[key] = task_units(task, prediction_record(folder), float(rows["main_score"].iloc[0]))
            else:
                rows = run_mteb(encoder, [task])
            rows["seconds"] = time.perf_counter() - t0
            rows["first_call_includes_encoding"] = position == 0
            for column, value in labels.items():
                rows[column] = value
            frames.append(rows)
        if frames:
            frames[-1]["task_seconds"] = time.perf_counter() - task_start
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def evaluate_layers(backbone: Backbone, tasks: Iterable, config: EncodeConfig, *,
                    layers: Sequence[int] | None = None, poolings: Sequence[str] | None = None,
                    progress: bool = True, pair_similarities: dict | None = None) -> pd.DataFrame:
    """Every (layer, pooling) of a backbone on every task: one forward pass per task text set.
    ``pair_similarities`` is keyed ``(task, layer, pooling)``."""
    all_layers = list(range(backbone.num_layers + 1)) if config.layers is None else list(config.layers)
    layers = all_layers if layers is None else list(layers)
    poolings = list(poolings or config.poolings)
    encoders = [({"layer": layer, "pooling": pooling},
                 states_encoder(backbone, config, pooling, layer, progress=progress and i == 0))
                for i, (pooling, layer) in enumerate((p, x) for p in poolings for x in layers)]
    return evaluate_encoders(tasks, encoders, progress=progress, pair_similarities=pair_similarities)
