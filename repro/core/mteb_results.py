"""Stored scores in mteb's own result format: each task's score as an ``mteb.TaskResult``, written in the folder
layout of ``mteb.ResultCache`` (``results/<model>/<revision>/<task>.json`` beside a ``model_meta.json``), so that
``mteb.ResultCache(folder).load_results()`` reads them back and they can sit beside published models' results.

Only what the result store keeps is exported: each task's main score per split and subset, and its evaluation time.
Each task says whether it is comparable with MTEB's public leaderboard (a table in the ``README.md`` beside the
results): only a task that matches MTEB exactly (``matches_mteb`` of the task table), scored on the uncapped ``full``
suite, is; the others say why not (a capped suite, a rebuilt corpus, a subset of the languages).

The same mark is machine-readable, in each result's ``dataset_revision`` (:func:`dataset_revision`): MTEB's own
revision of the task only for exact data on the uncapped ``full`` suite; any other result names the book's data,
``repro-<suite>-<data digest>-<capped|approximate|capped-approximate>``, so that mteb's tooling, a results
repository or a leaderboard that reads the JSON never takes it for the real task."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from repro.core.suites import ONLINE_SUITES
from repro.core.tasks import TASKS, data_fingerprint, suite_task
from repro.store.atomic import atomic_path, write_json

LEADERBOARD = "comparable with MTEB's public leaderboard"


def comparability(task: str, suite: str) -> str:
    """Whether a score of ``task`` on ``suite`` can sit beside MTEB's published scores (its data match MTEB's
    exactly and nothing was capped; a note where the exact data carry a qualification, e.g. the English subset that
    MTEB's English leaderboard also scores), and if not, why."""
    match = TASKS[task].matches_mteb if task in TASKS else "not an offline task of the book"
    reasons = [] if match.startswith("exact") else [match]
    if suite != "full":
        reasons.append(f"scored on the capped '{suite}' suite")
    if reasons:
        return "not comparable: " + "; ".join(reasons)
    note = match.removeprefix("exact").strip(" ()")
    return LEADERBOARD + (f" (note: {note})" if note else "")


def exact_data(task: str, suite: str) -> bool:
    """Whether a score of ``task`` on ``suite`` was computed on exactly MTEB's data: the real MTEB task (an online
    suite), or an offline task the data README lists as exact, uncapped (the ``full`` suite)."""
    if suite in ONLINE_SUITES:
        return True
    return task in TASKS and TASKS[task].matches_mteb.startswith("exact") and suite == "full"


def dataset_revision(task: str, suite: str) -> str | None:
    """The ``dataset_revision`` an exported result of ``task`` on ``suite`` carries: None (keep MTEB's own) for
    exactly MTEB's data (:func:`exact_data`), else ``repro-<suite>-<digest>-<kind>`` with the digest of the task's
    offline files (:func:`repro.core.tasks.data_fingerprint`) and the kind ``capped`` (a capped suite),
    ``approximate`` (data that differ from MTEB's) or ``capped-approximate`` (both)."""
    if exact_data(task, suite):
        return None
    if task not in TASKS:
        raise ValueError(f"'{task}' is not an offline task of the book; valid: {', '.join(TASKS)}")
    kinds = (["capped"] if suite != "full" else []) + ([] if TASKS[task].matches_mteb.startswith("exact")
                                                        else ["approximate"])
    return f"repro-{suite}-{data_fingerprint(task)}-{'-'.join(kinds)}"


def task_result(task: str, rows: Iterable[dict], suite: str):
    """One task's stored rows (``split``, ``subset``, ``main_score``, ``evaluation_time``) as an mteb TaskResult."""
    from mteb import TaskResult  # (the reading pages never import mteb)

    rows = list(rows)
    if not rows:
        raise ValueError(f"{task}: no stored score to export")
    scores: dict = {}
    for row in rows:
        subset = row.get("subset", "default")
        scores.setdefault(row.get("split", "test"), {})[subset] = {
            "main_score": float(row["main_score"]), "hf_subset": subset, "languages": ["eng-Latn"]}
    seconds = float(sum(row.get("evaluation_time") or 0.0 for row in rows))
    result = TaskResult.from_task_results(suite_task(task, suite), scores, seconds)
    ours = dataset_revision(task, suite)
    if ours is not None:  # the book's data, never MTEB's revision for data that differ
        result.dataset_revision = ours
    return result


def write_result_cache(tasks: dict[str, list[dict]], folder: str | Path, model_name: str, revision: str,
                       suite: str, embed_dim: int | None = None, about: str = "") -> Path:
    """Write every task of ``tasks`` (task name -> its stored rows) as mteb results of ``model_name`` at
    ``revision`` under ``folder`` (an ``mteb.ResultCache`` path), with a ``model_meta.json`` and the tasks'
    comparability; returns the model's result folder."""
    from mteb import ResultCache

    if not tasks:
        raise ValueError("no stored scores to export")
    cache = ResultCache(Path(folder))
    target = None
    for task, rows in sorted(tasks.items()):
        result = task_result(task, rows, suite)
        path = cache.get_task_result_path(result.task_name, model_name.replace("/", "__"), revision)
        path.parent.mkdir(parents=True, exist_ok=True)
        result.to_disk(path)
        target = path.parent
    meta = {"name": model_name, "revision": revision, "release_date": None, "languages": ["eng-Latn"],
            "n_parameters": None, "memory_usage_mb": None, "max_tokens": None, "embed_dim": embed_dim,
            "license": None, "open_weights": True, "public_training_code": None, "public_training_data": None,
            "framework": ["PyTorch"], "similarity_fn_name": "cosine", "use_instructions": False,
            "training_datasets": None, "loader": None}
    write_json(target / "model_meta.json", meta)
    lines = [f"# {model_name} at {revision}", "", f"Exported by repro from {about or 'its result store'}, suite "
             f"'{suite}': each task's main score only.", "",
             "Each result's `dataset_revision` says whose data it was computed on: MTEB's own revision only for "
             "exactly MTEB's data on the uncapped `full` suite; otherwise `repro-<suite>-<data digest>-<kind>`, the "
             "book's data (kind: `capped`, `approximate` or `capped-approximate`).", "",
             "| task | dataset_revision | why | comparable with MTEB's public leaderboard? |", "|---|---|---|---|",
             *[f"| {t} | {_revision_cell(t, suite)} | {_revision_reason(t, suite)} | {comparability(t, suite)} |"
               for t in sorted(tasks)], ""]
    with atomic_path(target / "README.md") as tmp:  # not JSON: mteb's loader reads every JSON file as a result
        tmp.write_text("\n".join(lines))
    return target


def _revision_cell(task: str, suite: str) -> str:
    ours = dataset_revision(task, suite)
    return f"`{ours}`" if ours else "MTEB's own"


def _revision_reason(task: str, suite: str) -> str:
    if exact_data(task, suite):
        return "exactly MTEB's data, uncapped"
    reasons = ([f"capped '{suite}' suite"] if suite != "full" else []) + (
        [] if TASKS[task].matches_mteb.startswith("exact") else ["the data differ from MTEB's"])
    return "; ".join(reasons)


def read_back(folder: str | Path) -> dict[tuple[str, str], float]:
    """What mteb's own loader reads from ``folder``: (model name, task) -> main score (x1, mteb's scale)."""
    from mteb import ResultCache

    results = ResultCache(Path(folder)).load_results(include_remote=False)
    return {(model.model_name, task.task_name): float(task.get_score())
            for model in results.model_results for task in model.task_results}


def stored_rows(records: Iterable[dict], variant: str | None = None) -> dict[str, list[dict]]:
    """task -> rows of result-store records (one task per record, or several tasks in one), keeping one
    ``variant`` where the rows have variants (the EmbedFilter sweeps)."""
    out: dict[str, list[dict]] = {}
    for record in records:
        for row in record["rows"]:
            if "variant" in row and row["variant"] != (variant or "raw"):
                continue
            task = row.get("task") or record["params"].get("task")
            out.setdefault(task, []).append(row)
    return out


__all__ = ["LEADERBOARD", "comparability", "dataset_revision", "exact_data", "read_back", "stored_rows", "task_result",
           "write_result_cache"]
