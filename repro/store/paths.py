"""Where things live: the shared data folder, the cache folder, the results folder.

Every location can be moved with an environment variable, so a user can point the book at their
own copy of the data or put the (large) caches on another disk.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

DATA_ENV = "REPRO_DATA_DIR"
CACHE_ENV = "REPRO_CACHE_DIR"
RESULTS_ENV = "REPRO_RESULTS_DIR"
STATES_ENV = "REPRO_STATES_DIR"


def data_jsonl(relative: str, purpose: str) -> list[dict]:
    """The rows of a JSON-lines file of the data folder (blank lines skipped); a missing file says what it was
    needed for."""
    path = data_dir() / relative
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found ({purpose}; set {DATA_ENV} to the shared data folder)")
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def data_dir() -> Path:
    """The offline data folder (default ``../shared/data`` next to the repository)."""
    folder = Path(os.environ.get(DATA_ENV, REPO_ROOT.parent / "shared" / "data")).expanduser()
    if not (folder / "eval").is_dir():
        raise FileNotFoundError(
            f"data folder {folder} not found (it must contain eval/ and train/); "
            f"set {DATA_ENV} to the folder holding the offline MTEB data"
        )
    return folder


def cache_dir() -> Path:
    """Cache for converted backbones and encoded states (large, outside git)."""
    folder = Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "repro")).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def results_dir() -> Path:
    """Committed small JSON results (default ``results/`` in the repository)."""
    folder = Path(os.environ.get(RESULTS_ENV, REPO_ROOT / "results")).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def states_dir() -> Path:
    """Cache of encoded states (default ``<cache>/states``)."""
    folder = Path(os.environ.get(STATES_ENV, cache_dir() / "states")).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def offline() -> None:
    """Switch the Hugging Face libraries to offline mode (the book's data and backbones are local), unless the
    user chose otherwise. Called explicitly by the command line, the build and the pages, never on import."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
