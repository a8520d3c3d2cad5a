"""Frames derived from the whole result store (the claims ledger), cached on disk between processes.

The ledger reads about 2,900 stored results and takes 25-40 s to build; a page that shows verdicts builds it, and so
do the intro, the summaries and the ledger page, each in its own kernel. :func:`cached_frame` keeps a built frame
in ``$REPRO_LEDGER_CACHE`` (a folder; the pages set it to ``<cache>/derived``, :func:`enable_for_pages`; unset, or
``off``, nothing is cached), keyed by everything that can change it:

* the content of every file of the result store (``REPRO_RESULTS_DIR``) and its path;
* the library's code (every file of the ``repro`` package) and the versions of the libraries that compute verdicts;
* the data folder's files (path, size, modification time);
* the frame's own parameters (the profile, the pages' overrides).

A build that stored new results on the way (a computed page) is not cached: the store it was keyed by is gone.
Run folders (the weights on this machine) are not in the key: the ledger reads the store only (the guard that opens
a run folder, ``converged.check_start``, runs where a page computes, before anything is stored). The
results a build read are kept with the frame and written to the read log again on every use, so the cost of a page
(:mod:`repro.book.page_costs`) is the same with and without the cache. Files are written atomically; a file that
cannot be read is built again.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import pandas as pd

from repro.store.atomic import atomic_path
from repro.store.fingerprint import sha256_files
from repro.store.paths import cache_dir, data_dir, results_dir
from repro.store.results import log_read_lines, recording_reads

ENV = "REPRO_LEDGER_CACHE"
KEEP = 8  # the newest files of one frame kept (one per store state, code and parameters)
PACKAGE = Path(__file__).resolve().parents[1]  # the repro package
LIBRARIES = ("numpy", "pandas", "scipy", "statsmodels", "mteb", "torch")  # what the frames' numbers come from


def enable_for_pages() -> None:
    """A page caches its derived frames in ``<cache>/derived`` unless the user chose a folder (or ``off``)."""
    os.environ.setdefault(ENV, str(cache_dir() / "derived"))


def _folder() -> Path | None:
    value = os.environ.get(ENV, "").strip()
    return None if value in ("", "off") else Path(value).expanduser()


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _tree(folder: Path, pattern: str) -> list[Path]:
    return sorted(p for p in folder.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts)


def store_key() -> str:
    """The result store's paths and content."""
    root = results_dir()
    files = _tree(root, "*.json")
    return _digest([str(root.resolve()), *(str(p.relative_to(root)) for p in files), sha256_files(files)])


def code_key() -> str:
    """The library's files and the versions of the libraries the numbers come from."""
    files = _tree(PACKAGE, "*")
    versions = [f"{name}=={_version(name)}" for name in LIBRARIES]
    return _digest([*(str(p.relative_to(PACKAGE)) for p in files), sha256_files(files), *versions])


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def data_key() -> str:
    """The data folder's files by path, size and modification time (``none`` without a data folder)."""
    try:
        root = data_dir()
    except FileNotFoundError:
        return "none"
    return _digest([f"{p.relative_to(root)} {s.st_size} {s.st_mtime_ns}" for p in _tree(root, "*")
                    for s in [p.stat()]])


def frame_key(name: str, params: dict) -> str:
    return _digest([name, json.dumps(params, sort_keys=True, default=str), store_key(), code_key(), data_key()])[:20]


def cached_frame(name: str, params: dict, build: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """``build()``, or the frame a process built before under the same key (see the module's docstring)."""
    folder = _folder()
    if folder is None:
        return build()
    key = frame_key(name, params)
    path = folder / f"{name}-{key}.pkl"
    if path.is_file():
        try:
            with open(path, "rb") as handle:
                frame, reads = pickle.load(handle)
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError, ImportError):
            path.unlink(missing_ok=True)  # unreadable: built again below
        else:
            log_read_lines(reads)
            return frame
    with recording_reads() as reads:
        frame = build()
    if frame_key(name, params) == key:  # nothing was stored on the way
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            pickle.dump((frame, list(reads)), handle, protocol=pickle.HIGHEST_PROTOCOL)
        _prune(folder, name)
    return frame


def _prune(folder: Path, name: str) -> None:
    """Keep the newest :data:`KEEP` files of frame ``name`` (another process may prune at the same time)."""
    stamped = []
    for path in folder.glob(f"{name}-*.pkl"):
        try:
            stamped.append((path.stat().st_mtime, path))
        except FileNotFoundError:
            continue
    for _, old in sorted(stamped)[:-KEEP]:
        old.unlink(missing_ok=True)
