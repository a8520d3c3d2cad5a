"""Stored per-task scores of one (trained) Embedder: mteb through :class:`repro.core.evaluate.MtebEncoder`,
one result per task, each with the digest of the weights that produced it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from repro.core.embedder import Embedder
from repro.core.evaluate import MtebEncoder, evaluate_encoders
from repro.core.paired import lacks_units
from repro.core.suites import describe_suite, suite_caps
from repro.core.tasks import TASKS, check_task_names, data_fingerprint, suite_task
from repro.store.results import encode_array, load_or_compute, load_result

log = logging.getLogger(__name__)


def task_params(identity: dict, suite: str, task: str) -> dict:
    """The result key of one task's stored score (:func:`evaluate_per_task` stores under it)."""
    return {**identity, "suite": suite, "caps": describe_suite(suite), "task": task, "data": data_fingerprint(task)}


def stored_per_task(experiment: str, identity: dict, suite: str, tasks: Sequence[str]) -> dict[str, dict]:
    """The stored per-task records of ``identity`` (missing tasks left out), never computing anything: what a
    page renders from."""
    records = {task: load_result(experiment, task_params(identity, suite, task)) for task in check_task_names(tasks, suite)}
    return {task: record for task, record in records.items() if record is not None}


def evaluate_per_task(experiment: str, identity: dict, suite: str, tasks: Sequence[str] | None,
                      make_embedder: Callable[[], tuple[Embedder, str]], progress: bool = True,
                      recompute: bool = False, label: str = "", recompute_stale: bool = False,
                      instructions: dict[str, str] | None = None, complete_units: bool = False) -> pd.DataFrame:
    """mteb scores of one trained embedder, stored per task under ``identity`` + suite + task (STS keeps its
    per-pair similarities). ``make_embedder() -> (Embedder, weights digest)`` runs only if a task is missing
    (or, with ``recompute_stale``, always: then every task stored from other weights is recomputed); scores
    from two different trainings (digests) are never mixed in one table. ``complete_units``: also recompute a
    stored offline non-STS score that has no per-unit data (stored before those were kept; the paired tests
    inside a task need them), from weights that must be the ones it was scored from (the digest check above)."""
    suite_caps(suite)
    tasks = check_task_names(tasks, suite)
    state: dict = {}

    def load():
        embedder, state["weights"] = make_embedder()
        state["encoder"] = MtebEncoder(embedder, label or embedder.identity, instructions=instructions)

    if recompute_stale:
        load()
    digests: set = set()
    frames = []
    for name in tasks:
        params = task_params(identity, suite, name)

        def compute(name=name):
            if "encoder" not in state:
                load()
            start = time.perf_counter()
            sims: dict = {}
            units: dict = {}
            rows = evaluate_encoders([suite_task(name, suite)], [({}, state["encoder"])], progress=False,
                                     pair_similarities=sims, units=units)
            extra = {"weights_sha256": state["weights"]}
            if sims:
                extra["pair_similarities"] = encode_array(next(iter(sims.values())))
            if units:
                extra["units"] = next(iter(units.values()))
            return rows, {"task_seconds": time.perf_counter() - start}, extra

        stale = recompute_stale and (load_result(experiment, params) or {}).get("weights_sha256") != state["weights"]
        before = load_result(experiment, params) if complete_units else None
        stale = stale or lacks_units(before, name)
        record = load_or_compute(experiment, params, compute, recompute=recompute or stale)
        if lacks_units(before, name):  # the same weights (digest check below) give the same score, up to numerics
            change = pd.DataFrame(record["rows"])["main_score"].mean() - pd.DataFrame(before["rows"])["main_score"].mean()
            log.warning("%s %s: recomputed for its per-unit data; main score changed by %.2e", label, name, change)
        digests.add(record.get("weights_sha256"))
        frames.append(pd.DataFrame(record["rows"]).assign(weights_sha256=record.get("weights_sha256")))
        if progress:
            log.info("%s %s: %.4f", label, name, frames[-1]["main_score"].mean())
    if len(digests) > 1:  # e.g. weights lost and retrained: never mix two trainings in one table
        raise ValueError(f"the stored scores of {label} come from different trained weights "
                         f"({sorted(map(str, digests))}); rerun with recompute_stale=True "
                         f"(repro train ... --recompute-stale) to recompute those from other weights")
    return pd.concat(frames, ignore_index=True)


def records_frame(label: str, records: dict[str, dict]) -> pd.DataFrame:
    """Per-task stored records -> rows (method, task, category, score x100: the mean main score over its units)."""
    rows = [{"method": label, "task": task, "category": TASKS[task].category,
             "score": 100 * float(np.mean([r["main_score"] for r in record["rows"]]))}
            for task, record in records.items()]
    return pd.DataFrame(rows, columns=["method", "task", "category", "score"])
