"""The result store: ``results/<experiment>/<key>.json``, small, committed, with provenance.

A result holds its parameters, its rows (a tidy table), timings and provenance: package versions,
git commit (and whether the tree was dirty), data fingerprints, machine, date. Writes are atomic;
:func:`load_or_compute` returns the stored result for the exact parameters or computes and stores it.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from repro.store.atomic import write_json
from repro.store.fingerprint import params_hash
from repro.store.lanes import exclusive
from repro.store.paths import REPO_ROOT, results_dir

PACKAGES = ("torch", "transformers", "mteb", "sentence-transformers", "numpy", "scikit-learn", "scipy",
            "pandas", "peft", "accelerate", "gguf")


def encode_array(values) -> str:
    """A 1-D array as base64 of float16 (compact enough to commit: ~2 bytes a value)."""

    return base64.b64encode(np.asarray(values, dtype=np.float16).tobytes()).decode()


def decode_array(blob: str):

    return np.frombuffer(base64.b64decode(blob), dtype=np.float16).astype(np.float32)


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    out["python"] = platform.python_version()
    return out


def git_state() -> dict:
    def run(*args):
        try:
            return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    return {"commit": run("rev-parse", "HEAD") or None, "dirty": bool(run("status", "--porcelain", "--", "repro"))}


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else what ``platform`` knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


_GEMM: dict = {}


def gemm_gflops(size: int = 512, repeats: int = 5) -> float | None:
    """This process's fp32 matrix-multiply rate in GFLOP/s (torch, its current threads), measured once per
    process (a few milliseconds): what a stored timing was measured against (machines here differ by 2-4x).
    None in a process that never loaded torch: it computed nothing a GEMM rate would explain."""
    if "rate" not in _GEMM:
        torch = sys.modules.get("torch")
        if torch is None:
            return None
        a, b = torch.randn(size, size), torch.randn(size, size)
        a @ b
        start = time.perf_counter()
        for _ in range(repeats):
            a @ b
        _GEMM["rate"] = round(repeats * 2 * size ** 3 / (time.perf_counter() - start) / 1e9, 1)
        _GEMM["threads"] = torch.get_num_threads()
    return _GEMM["rate"]


def machine() -> dict:
    """The machine a result was computed on: platform, CPU model, CPU count, torch threads, fp32 GEMM rate."""
    rate = gemm_gflops()
    return {"platform": platform.platform(), "processor": platform.machine(), "cpus": os.cpu_count(),
            "cpu_model": cpu_model(), "torch_threads": _GEMM.get("threads"), "gemm_gflops_fp32": rate}


def provenance() -> dict:
    return {
        "packages": package_versions(),
        "git": git_state(),
        "machine": machine(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "lane": os.environ.get("REPRO_LANE") or None,  # which of several processes sharing a page computed it
        "page": os.environ.get("REPRO_NOTEBOOK") or None,  # the book page whose build computed it (repro.book.build)
    }


def params_key(params: dict) -> str:
    slug = "-".join(str(params[k]) for k in sorted(params) if isinstance(params[k], (str, int)) and k in
                    ("attention", "backbone", "model", "prompt", "suite", "task"))
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", slug)[:80]
    return f"{slug + '-' if slug else ''}{params_hash(params)}"


def result_path(experiment: str, params: dict) -> Path:
    if not re.fullmatch(r"[A-Za-z0-9._-]+", experiment):
        raise ValueError(f"experiment names use letters, digits, '.', '_' and '-' only: {experiment!r}")
    return results_dir() / experiment / f"{params_key(params)}.json"


def save_result(experiment: str, params: dict, rows: pd.DataFrame, *, timings: dict | None = None,
                extra: dict | None = None) -> Path:
    path = result_path(experiment, params)
    record = {
        "experiment": experiment,
        "params": params,
        "rows": json.loads(rows.to_json(orient="records")),
        "timings": timings or {},
        "provenance": provenance(),
        **(extra or {}),
    }
    write_json(path, record)
    return path


READ_LOG_ENV = "REPRO_READ_LOG"  # a file: every stored result read is appended as a line "experiment/key"


_RECORDERS: list[list[str]] = []  # the reads recorded by each open recording_reads() of this process


def _log_reads(experiment: str, paths) -> None:
    """Append the results read to the read log (``REPRO_READ_LOG``; the book's build sets one per page, so that a
    page's cost is the cost of the results it reads: :mod:`repro.book.page_costs`)."""
    log_read_lines([f"{experiment}/{Path(p).stem}" for p in paths])


def log_read_lines(lines: list[str]) -> None:
    """Append reads ("experiment/key" lines) to the read log and to every open :func:`recording_reads` (a frame
    built from the store and cached replays the reads of its build: :mod:`repro.store.derived`)."""
    for recorder in _RECORDERS:
        recorder.extend(lines)
    log = os.environ.get(READ_LOG_ENV)
    if log and lines:
        with open(log, "a", encoding="utf-8") as handle:
            handle.writelines(f"{line}\n" for line in lines)


@contextmanager
def recording_reads() -> Iterator[list[str]]:
    """A list that collects the reads of the stored results inside the block (they still go to the read log)."""
    reads: list[str] = []
    _RECORDERS.append(reads)
    try:
        yield reads
    finally:
        _RECORDERS[:] = [r for r in _RECORDERS if r is not reads]  # this one (an empty list equals any other)


class CorruptResult(ValueError):
    """A stored result file that is not a valid record, or holds other parameters than its key."""


def read_record(path: Path) -> dict:
    """A stored result file's record; a file that is not valid JSON or not a record stops with one line naming it
    and what to do (never a parser's traceback)."""
    fix = f"restore it from git (git checkout -- {path}) or delete it to compute it again"
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CorruptResult(f"{path} is not valid JSON ({error.msg if hasattr(error, 'msg') else error}): "
                            f"{fix}") from None
    if not isinstance(record, dict) or "params" not in record or "rows" not in record:
        raise CorruptResult(f"{path} is not a stored result (no params or rows): {fix}")
    return record


def load_result(experiment: str, params: dict) -> dict | None:
    path = result_path(experiment, params)
    if not path.is_file():
        return None
    record = read_record(path)
    if json.loads(json.dumps(record["params"], default=str)) != json.loads(json.dumps(params, default=str)):
        raise CorruptResult(f"{path} holds other parameters than its key: restore it from git (git checkout -- "
                            f"{path}) or delete it to compute it again")
    _log_reads(experiment, [path])
    return record


def rows_of(record: dict) -> pd.DataFrame:
    return pd.DataFrame(record["rows"])


COMPUTE_ENV = "REPRO_COMPUTE"  # "refuse": any result that is not stored raises instead of being computed


def load_covering(experiment: str, params: dict, list_key: str, row_key: str) -> dict | None:
    """A stored result that answers ``params`` although its key differs: one whose parameters are the same but for
    ``list_key`` (a list of what it computed, e.g. the variants of a sweep), which holds every value ``params``
    asks for. Its rows are those whose ``row_key`` is asked for, in the order asked; None if none is stored. Only
    the files of the same slug (backbone, prompt, suite, task...) are read (an experiment whose keys have no slug:
    all its files)."""
    wanted = list(params[list_key])
    folder = results_dir() / experiment
    slug = params_key(params).rsplit("-", 1)[0] if "-" in params_key(params) else ""
    same = {k: v for k, v in json.loads(json.dumps(params, default=str)).items() if k != list_key}
    for path in sorted(folder.glob(f"{slug}-*.json" if slug else "*.json") if folder.is_dir() else []):
        record = read_record(path)
        stored = record.get("params", {})
        if {k: v for k, v in stored.items() if k != list_key} != same or not set(wanted) <= set(stored.get(list_key, [])):
            continue
        rows = [r for r in record["rows"] if r.get(row_key) in wanted]
        rows.sort(key=lambda r: wanted.index(r[row_key]))
        _log_reads(experiment, [path])
        return record | {"rows": rows, "covered_by": stored[list_key]}
    return None


def _estimate(experiment: str) -> str:
    """A stored result's typical cost in ``experiment`` (the median of its records' first timing in seconds)."""
    folder = results_dir() / experiment
    seconds = []
    for path in sorted(folder.glob("*.json"))[:30] if folder.is_dir() else []:
        timings = json.loads(path.read_text()).get("timings", {})
        first = next((v for v in timings.values() if isinstance(v, (int, float))), None)
        if first is not None:
            seconds.append(float(first))
    return f"about {sorted(seconds)[len(seconds) // 2] / 60:.1f} min each on this store's machines" if seconds \
        else "cost unknown (no stored result of this experiment to go by)"


def load_or_compute(experiment: str, params: dict, compute: Callable[[], tuple[pd.DataFrame, dict, dict]],
                    recompute: bool = False) -> dict:
    """The stored result for ``params``, or ``compute()`` -> (rows, timings, extra), stored and returned.
    The computation holds a lock on the result, so another process (a lane, :mod:`repro.store.lanes`) that asks for
    it meanwhile waits and then loads it instead of computing it again."""

    if not recompute:
        record = load_result(experiment, params)
        if record is not None:
            return record
    if os.environ.get(COMPUTE_ENV) == "refuse":
        raise RuntimeError(f"{COMPUTE_ENV}=refuse: {experiment}/{params_key(params)} is not stored and would be computed "
                           f"({_estimate(experiment)})")
    with exclusive(str(result_path(experiment, params))):
        record = None if recompute else load_result(experiment, params)  # stored by another lane meanwhile?
        if record is None:
            # said before the work starts (a page run by papermill shows it in the cell's output), so a reader who
            # narrowed a page and did not expect a computation can stop it
            print(f"computing {experiment}/{params_key(params)} ({_estimate(experiment)}); Ctrl-C stops it, what is "
                  "stored stays and a rerun resumes", flush=True)
            rows, timings, extra = compute()
            save_result(experiment, params, rows, timings=timings, extra=extra)
            record = load_result(experiment, params)
    return record


def all_results(experiment: str, where: Callable[[dict], bool] | None = None) -> list[dict]:
    """Every stored result of ``experiment`` (``where``: only those whose params it accepts), in file order."""
    folder = results_dir() / experiment
    paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    records = [(p, read_record(p)) for p in paths]
    kept = [(p, r) for p, r in records if where is None or where(r["params"])]
    _log_reads(experiment, [p for p, _ in kept])
    return [r for _, r in kept]
