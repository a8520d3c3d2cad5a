"""The cost of this book, read from what every stored result carries (``results/<experiment>/*.json``): its
timings and its provenance (machine, date, commit). Nothing is measured here.

* :func:`stored_costs`: one row per stored result: the experiment, the wall-clock seconds its computation took as
  stored (:func:`seconds_of`), the machine (CPU model and count, the fp32 GEMM rate where recorded) and the date.
* :func:`per_experiment`, :func:`per_run` (the training runs) and :func:`machines`; what each page reads, and so
  costs, is recorded by the build (:mod:`repro.book.page_costs`).

Timings are wall-clock seconds of the computation that produced the result, measured by the code that stored
it; results stored without a timing count as unknown, never as zero.
"""

from __future__ import annotations

import json

import pandas as pd

from repro.store.paths import results_dir

RUN_EXPERIMENTS = ("trained_runs", "autoreg_runs")
WHOLE = ("total_seconds",)  # a timing that already covers the others of its record
PARTS = ("train_seconds", "task_seconds", "seconds", "filter_build_seconds")


def seconds_of(timings: dict) -> float | None:
    """The wall-clock seconds a stored result took: ``total_seconds`` where stored, else the sum of its parts
    (training, task scoring, filter building); None when the result stored no timing."""
    for key in WHOLE:
        if key in timings:
            return float(timings[key])
    parts = [float(timings[k]) for k in PARTS if k in timings]
    return sum(parts) if parts else None


def stored_costs() -> pd.DataFrame:
    """One row per stored result (see the module docstring)."""
    rows = []
    for folder in sorted(p for p in results_dir().iterdir() if p.is_dir()):
        for path in sorted(folder.glob("*.json")):
            record = json.loads(path.read_text())
            machine = record.get("provenance", {}).get("machine", {})
            rows.append({"experiment": record.get("experiment", folder.name), "result": path.stem,
                         "seconds": seconds_of(record.get("timings") or {}),
                         "cpu_model": machine.get("cpu_model", "not recorded"), "cpus": machine.get("cpus"),
                         "gemm_gflops_fp32": machine.get("gemm_gflops_fp32"),
                         "date": (record.get("provenance", {}).get("date") or "")[:10] or None,  # the day
                         "commit": (record.get("provenance", {}).get("git") or {}).get("commit")})
    return pd.DataFrame(rows, columns=["experiment", "result", "seconds", "cpu_model", "cpus", "gemm_gflops_fp32",
                                       "date", "commit"])


def per_experiment(costs: pd.DataFrame, pages: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """Per experiment: results stored, how many carry a timing, their hours, the first and last date, and the pages
    that read it (``pages``: :func:`repro.book.page_costs.experiment_pages`)."""
    grouped = costs.groupby("experiment")
    table = pd.DataFrame({"results": grouped.size(), "timed": grouped["seconds"].count(),
                          "hours (wall clock)": grouped["seconds"].sum(min_count=1) / 3600,
                          "first": grouped["date"].min(), "last": grouped["date"].max()})
    table["pages"] = [", ".join((pages or {}).get(e, [])) or "(no page)" for e in table.index]
    return table.sort_values("hours (wall clock)", ascending=False)


def per_run(costs: pd.DataFrame) -> pd.DataFrame:
    """The training runs (Paper 1 designs and contrastive baselines, AutoRegEmbed stages): their training
    hours, machine and date, longest first."""
    runs = costs[costs.experiment.isin(RUN_EXPERIMENTS)].copy()
    runs["training hours"] = runs["seconds"] / 3600
    return runs[["experiment", "result", "training hours", "cpu_model", "gemm_gflops_fp32", "date"]].sort_values(
        "training hours", ascending=False).reset_index(drop=True)


def machines(costs: pd.DataFrame) -> pd.DataFrame:
    """The machines results were computed on (CPU model and count, as recorded), with their results and hours."""
    keyed = costs.assign(cpu_model=costs["cpu_model"].fillna("not recorded"), cpus=costs["cpus"].fillna(-1))
    table = keyed.groupby(["cpu_model", "cpus"]).agg(results=("result", "size"),
                                                     hours=("seconds", lambda s: s.sum(min_count=1) / 3600),
                                                     gemm_gflops_fp32=("gemm_gflops_fp32", "median"))
    return table.rename(index={-1: "not recorded"}, level="cpus")
