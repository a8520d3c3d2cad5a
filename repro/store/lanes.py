"""Lanes: several processes executing the same page split its runs instead of repeating them.

A page that trains and scores many configurations (the Paper 3 grids, the five Paper 1 models) walks a list
of runs. With ``REPRO_LANE="k/N"`` a process takes that list from its own starting point (rotated by k/N of
its length, :func:`lane_order`), and every stored result is computed under an inter-process lock
(:func:`exclusive`, used by :func:`repro.store.results.load_or_compute` and by the run folders' training), so when
a lane reaches a run another lane is computing it first goes on with the rest of its list (the run is
deferred: :class:`Busy`), then comes back to the deferred runs, computing those that have become free and
waiting only when all of them are busy. Every lane walks the whole list, so each
one ends with the complete page; ``.venv/bin/repro build --only PAGE --lanes N`` starts the N processes.
Without ``REPRO_LANE`` nothing changes: one process, the list in its own order.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import re
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from repro.store.paths import cache_dir

LANE_ENV = "REPRO_LANE"
_DEFER = contextvars.ContextVar("repro_lanes_defer", default=False)  # a held lock raises Busy instead of waiting


class Busy(Exception):
    """A lock another process holds, met while a lane defers such runs (first pass of :func:`in_lane_order`)."""


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def current_lane() -> tuple[int, int]:
    """(k, N) from ``REPRO_LANE="k/N"`` (0 <= k < N); (0, 1) when it is unset."""
    value = os.environ.get(LANE_ENV, "").strip()
    if not value:
        return 0, 1
    match = re.fullmatch(r"(\d+)/(\d+)", value)
    if not match or not int(match[1]) < int(match[2]):
        raise ValueError(f"{LANE_ENV} must look like k/N with 0 <= k < N (e.g. 0/2), got {value!r}")
    return int(match[1]), int(match[2])


def lane_order(items: Iterable[V]) -> list[V]:
    """``items`` in the order this lane takes them: lane k of N starts k/N of the way along and wraps."""
    items = list(items)
    k, n = current_lane()
    start = k * len(items) // n
    return items[start:] + items[:start]


def in_lane_order(thunks: dict[K, Callable[[], V]]) -> dict[K, V]:
    """Call every thunk, in this lane's order; the results keep the order of ``thunks``. With several lanes,
    a thunk that meets a lock another lane holds is deferred (what it stored so far stays stored). The
    deferred thunks are then tried again, in order and still without waiting, as long as a pass gets one of
    them done; only when every one left is busy does the lane wait, for the first of them (so a lane never
    waits on a run while another one it could compute is free)."""
    done: dict = {}
    pending = lane_order(thunks)
    lanes = current_lane()[1]
    while pending:
        busy = []
        for key in pending:
            token = _DEFER.set(lanes > 1)
            try:
                done[key] = thunks[key]()
            except Busy:
                busy.append(key)
            finally:
                _DEFER.reset(token)
        if busy and len(busy) == len(pending):  # nothing free: wait for the first (unless an enclosing pass
            key = busy.pop(0)                   # defers it in turn: then Busy goes up to that pass)
            done[key] = thunks[key]()
        pending = busy
    return {key: done[key] for key in thunks}


@contextmanager
def exclusive(name: str) -> Iterator[None]:
    """Hold the inter-process lock ``name`` (a file under ``<cache>/locks``), waiting while another process
    holds it (or raising :class:`Busy` during a lane's first pass). The operating system releases it when its
    process dies, so a killed lane never blocks the others. Not re-entrant: a process must not take the same
    name twice at once."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): one process at a time is the user's job
        yield
        return
    folder = cache_dir() / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[-80:]
    path = folder / f"{slug}-{hashlib.sha256(name.encode()).hexdigest()[:12]}.lock"
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (fcntl.LOCK_NB if _DEFER.get() else 0))
        except BlockingIOError:
            raise Busy(name) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
