"""The one inference loop: items sorted by length (longest first), grouped into batches, one no-gradient forward per
batch, the outputs written back in input order. The states encoder (:mod:`repro.core.encode`), the trained
contrastive models (:mod:`repro.training.contrastive`) and AutoRegEmbed (:mod:`repro.autoregembed.model`) all run
their inference through :func:`run_in_order`; each supplies only its forward for a group of items.

Groupings:

* ``padded``: consecutive items (longest first) while ``longest x count <= batch_tokens`` and at most ``max_batch``
  items: a right-padded batch wastes little on items of similar length;
* ``tokens``: consecutive items while their real tokens sum to at most ``batch_tokens`` (a packed batch has no
  padding, so its cost is its real tokens);
* ``rows``: items packed first-fit into rows of ``row_tokens`` (:func:`repro.core.packing.assign_rows`),
  ``batch_tokens // row_tokens`` rows per forward.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from repro.core.packing import ROW_TOKENS, assign_rows

GROUPINGS = ("padded", "tokens", "rows")
Output = np.ndarray | dict[str, np.ndarray]


def length_batches(lengths: Sequence[int], batch_tokens: int, max_batch: int) -> list[list[int]]:
    """Consecutive index groups of a padded batch (input already sorted by length, longest first)."""
    groups, current, longest = [], [], 0
    for i, n in enumerate(lengths):
        longest_if_added = max(longest, n)
        if current and (longest_if_added * (len(current) + 1) > batch_tokens or len(current) >= max_batch):
            groups.append(current)
            current, longest_if_added = [], n
        current.append(i)
        longest = longest_if_added
    if current:
        groups.append(current)
    return groups


def token_batches(lengths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """Consecutive index groups of at most ``batch_tokens`` real tokens each (an item longer than that alone)."""
    groups, current, used = [], [], 0
    for i, n in enumerate(lengths):
        if current and used + n > batch_tokens:
            groups.append(current)
            current, used = [], 0
        current.append(i)
        used += n
    if current:
        groups.append(current)
    return groups


def batches(lengths: Sequence[int], grouping: str = "padded", batch_tokens: int = 4096, max_batch: int = 64,
            row_tokens: int = ROW_TOKENS) -> list[list[int]]:
    """Groups of input indices, longest items first (ties keep their input order), one group per forward."""
    if grouping not in GROUPINGS:
        raise ValueError(f"unknown grouping '{grouping}'; valid: {', '.join(GROUPINGS)}")
    if grouping == "rows":
        layout = assign_rows(lengths, row_tokens)
        per_forward = max(1, batch_tokens // row_tokens)
        return [[i for row in layout[first:first + per_forward] for i in row]
                for first in range(0, len(layout), per_forward)]
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    sorted_lengths = [lengths[i] for i in order]
    if grouping == "tokens":
        positions = token_batches(sorted_lengths, batch_tokens)
    else:
        positions = length_batches(sorted_lengths, batch_tokens, max_batch)
    return [[order[p] for p in group] for group in positions]


def run_in_order(lengths: Sequence[int], forward: Callable[[list[int]], Output], *, grouping: str = "padded",
                 batch_tokens: int = 4096, max_batch: int = 64, row_tokens: int = ROW_TOKENS, axis: int = 0,
                 model: torch.nn.Module | None = None, progress=None) -> Output | None:
    """``forward(group)`` for every group of :func:`batches`, without gradients; returns its outputs (an array, or a
    dict of arrays, with the group's items along ``axis``) assembled in input order (None when there are no items).

    ``model``: switched to eval mode for the loop and back to its previous mode after it (a model under training
    runs with ``torch.no_grad``; without a model, ``torch.inference_mode``). ``progress``: a tqdm bar advanced by
    each group's tokens."""
    out: dict[str, np.ndarray] | None = None
    single = False
    was_training = model.training if model is not None else False
    if model is not None:
        model.eval()
    try:
        with torch.no_grad() if model is not None else torch.inference_mode():
            for group in batches(lengths, grouping, batch_tokens, max_batch, row_tokens):
                result = forward(group)
                if not isinstance(result, dict):
                    single, result = True, {"": result}
                if out is None:
                    out = {}
                    for name, array in result.items():
                        shape = list(array.shape)
                        shape[axis] = len(lengths)
                        out[name] = np.zeros(shape, dtype=array.dtype)
                for name, array in result.items():
                    index = [slice(None)] * array.ndim
                    index[axis] = group
                    out[name][tuple(index)] = array
                if progress is not None:
                    progress.update(sum(lengths[i] for i in group))
    finally:
        if model is not None:
            model.train(was_training)
    if out is None:
        return None
    return out[""] if single else out
