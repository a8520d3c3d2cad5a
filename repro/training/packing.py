"""Padding-free packing: many token sequences in a few rows of one forward pass.

A training step embeds 3 x batch texts (queries, positives, hard negatives) of very different lengths. Padded
to the longest, a third to a half of the tokens a forward computes are padding; split into one forward per
role, each pays the per-forward overhead again. The packed layout (:mod:`repro.core.packing`: rows of
sequences with restarted positions and a block-diagonal mask) gives the padded forward's states within float
tolerance (tests check this for states, embeddings, losses and gradients).

:func:`pool_packed` turns the packed hidden states into what :func:`repro.training.heads.head_inputs` gives on
padded ones: each sequence's last state, its mean (one ``[n, rows * width]`` averaging matmul per layer), or
its token states unpacked into a right-padded ``[n, T, d]`` batch (model 4's head).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from repro.core.packing import ROW_TOKENS, Packed, assign_rows, pack, packed_hidden_states
from repro.training.heads import HEAD_INPUTS

__all__ = ["ROW_TOKENS", "Packed", "assign_rows", "pack", "packed_hidden_states", "pool_packed"]


def _flat_index(packed: Packed, width: int) -> torch.Tensor:
    return packed.row * width + packed.start


def _last_states(hidden: torch.Tensor, packed: Packed) -> torch.Tensor:
    flat = hidden.reshape(-1, hidden.shape[-1])
    return flat[_flat_index(packed, hidden.shape[1]) + packed.length - 1]


def _averaging(packed: Packed, width: int, dtype) -> torch.Tensor:
    """[n, rows * width]: 1 / length over each sequence's tokens."""
    total = packed.ids.shape[0] * width
    columns = torch.arange(total, device=packed.ids.device)[None]
    begin = _flat_index(packed, width)[:, None]
    inside = (columns >= begin) & (columns < begin + packed.length[:, None])
    return inside.to(dtype) / packed.length[:, None].to(dtype)


def _unpack(hidden: torch.Tensor, packed: Packed) -> tuple[torch.Tensor, torch.Tensor]:
    """Token states as a right-padded [n, T, d] batch and its padding mask [n, T] (True = padding)."""
    longest = int(packed.length.max())
    steps = torch.arange(longest, device=hidden.device)[None]
    padding = steps >= packed.length[:, None]
    index = (_flat_index(packed, hidden.shape[1])[:, None] + steps).clamp(max=hidden.shape[0] * hidden.shape[1] - 1)
    states = hidden.reshape(-1, hidden.shape[-1])[index]
    return states.masked_fill(padding[..., None], 0.0), padding


def pool_packed(hidden_states: Sequence[torch.Tensor], packed: Packed, head_input: str):
    """:func:`repro.training.heads.head_inputs` for packed states: the head's input [n, S, d] and padding
    mask [n, S] (or None), in the input order of the packed sequences."""
    if head_input not in HEAD_INPUTS:
        raise ValueError(f"unknown head input '{head_input}'; valid: {', '.join(HEAD_INPUTS)}")
    last = hidden_states[-1]
    if head_input in ("eos", "last_layer_eos"):
        return _last_states(last, packed)[:, None], None
    if head_input == "all_layers_eos":
        return torch.stack([_last_states(h, packed) for h in hidden_states[1:]], dim=1), None
    if head_input == "last_layer_tokens":
        return _unpack(last, packed)
    average = _averaging(packed, last.shape[1], last.dtype)
    if head_input == "mean":
        return (average @ last.reshape(-1, last.shape[-1]))[:, None], None
    layers = torch.stack([h.reshape(-1, h.shape[-1]) for h in hidden_states[1:]])  # [L, rows*width, d]
    return torch.einsum("nt,ltd->nld", average, layers), None
