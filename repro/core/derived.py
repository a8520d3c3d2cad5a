"""Derived statistics stored like every other result. A paired test that a page would otherwise recompute on
every build (a bootstrap of thousands of resamples per task) is computed once, keyed by its parameters and a
digest of the exact inputs it reads, and stored with provenance in ``results/derived_stats``: a change to the
stored scores it derives from changes the digest, so a stale statistic is never read."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from repro.store.results import load_or_compute, rows_of

EXPERIMENT = "derived_stats"


def inputs_digest(*arrays) -> str:
    """sha256 (16 hex digits) over the arrays' shapes and float64 values, in order."""
    digest = hashlib.sha256()
    for array in arrays:
        values = np.ascontiguousarray(np.asarray(array, dtype=np.float64))
        digest.update(repr(values.shape).encode())
        digest.update(values.tobytes())
    return digest.hexdigest()[:16]


def stored_statistic(name: str, params: dict, compute: Callable[[], list[dict]],
                     recompute: bool = False) -> pd.DataFrame:
    """The rows of statistic ``name`` for ``params`` (which identify its inputs, e.g. with :func:`inputs_digest`):
    read from the store, or computed once by ``compute() -> rows`` and stored with the seconds it took."""
    if "statistic" in params:
        raise ValueError("'statistic' is the key this store sets from name; rename the parameter")

    def run():
        start = time.perf_counter()
        rows = pd.DataFrame(compute())
        return rows, {"seconds": time.perf_counter() - start}, {"columns": list(rows.columns)}

    record = load_or_compute(EXPERIMENT, {"statistic": name, **params}, run, recompute=recompute)
    return rows_of(record)[record["columns"]]  # in the order computed (the store sorts a record's keys)
