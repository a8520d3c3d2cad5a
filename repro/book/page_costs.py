"""What each page costs to rerun: the rerun page's first table (:mod:`repro.book.parameter_table`: its second).

The standard build records, per page (:func:`record_page`, in ``book/page_costs.json``, committed): the seconds its
execution took here, reading the committed results (*from the cache*), and per experiment the stored results it
read (the result store logs each read: :data:`repro.store.results.READ_LOG_ENV`), with their stored timings. A page's cost *from scratch* is then the
wall-clock time stored with those results (:func:`repro.book.cost.seconds_of`: measured when each was computed, on
this book's 2-core machines); it *trains* when it reads a training run's record. A result several pages read counts
in each of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from repro.book.cost import RUN_EXPERIMENTS, seconds_of
from repro.pages.parameters import NOTEBOOKS
from repro.store.atomic import write_json
from repro.store.paths import REPO_ROOT, results_dir

COSTS_FILE = REPO_ROOT / "book" / "page_costs.json"


def recorded() -> dict:
    """What the standard build recorded, by page (empty before its first build)."""
    return json.loads(COSTS_FILE.read_text()) if COSTS_FILE.is_file() else {}


def _seconds(path: Path) -> float | None:
    return seconds_of(json.loads(path.read_text()).get("timings") or {}) if path.is_file() else None


def record_page(name: str, seconds: float, reads: list[str]) -> None:
    """Store page ``name``'s standard-build seconds and, per experiment, the results (``experiment/key``) it read:
    how many, the wall-clock seconds stored with them and how many carry no timing."""
    experiments: dict[str, dict] = {}
    for read in sorted(set(reads)):
        experiment = read.split("/")[0]
        stored = _seconds(results_dir() / f"{read}.json")
        entry = experiments.setdefault(experiment, {"results": 0, "seconds": 0.0, "untimed": 0})
        entry["results"] += 1
        entry["seconds"] = round(entry["seconds"] + (stored or 0.0), 1)
        entry["untimed"] += stored is None
    costs = recorded()
    costs[name] = {"seconds": round(float(seconds), 1), "experiments": experiments}
    write_json(COSTS_FILE, dict(sorted(costs.items())))


def page_costs() -> pd.DataFrame:
    """Per page of the book (in book order): its build seconds from the cache, the results it reads, their stored
    hours from scratch (and how many carry no timing) and the training runs among them. A page the build has not
    recorded yet has empty cells."""
    costs = recorded()
    rows = []
    for name in NOTEBOOKS:
        entry = costs.get(name)
        parts = entry["experiments"].values() if entry else []
        rows.append({"page": name,
                     "from the cache (s)": entry["seconds"] if entry else None,
                     "results read": sum(p["results"] for p in parts) if entry else None,
                     "from scratch (h)": round(sum(p["seconds"] for p in parts) / 3600, 2) if entry else None,
                     "untimed results": sum(p["untimed"] for p in parts) if entry else None,
                     "training runs": sum(e["results"] for k, e in entry["experiments"].items()
                                          if k in RUN_EXPERIMENTS) if entry else None})
    table = pd.DataFrame(rows).set_index("page")
    for column in ("results read", "untimed results", "training runs"):
        table[column] = table[column].astype("Int64")
    return table


def experiment_pages() -> dict[str, list[str]]:
    """The pages (in book order) that read each experiment's results, as the build recorded them."""
    costs = recorded()
    out: dict[str, list[str]] = {}
    for name in NOTEBOOKS:
        for experiment in sorted(costs.get(name, {}).get("experiments", {})):
            out.setdefault(experiment, []).append(name)
    return out
