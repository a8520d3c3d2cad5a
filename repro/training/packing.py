"""Padding-free packing: many token sequences in a few rows of one forward pass.

A training step embeds 3 x batch texts (queries, positives, hard negatives) of very different lengths. Padded
to the longest, a third to a half of the tokens a forward computes are padding; split into one forward per
role, each pays the per-forward overhead again. Packing puts the sequences side by side in rows of at most
``row_tokens`` tokens (first-fit decreasing), restarts the position ids at 0 for each sequence, and gives the
decoder a 4-D block-diagonal attention mask (causal inside a sequence for causal models, full for
bidirectional ones), so every sequence sees exactly the states it would see alone: the packed forward gives the
padded forward's states within float tolerance (tests check this for states, embeddings, losses and
gradients). Row-end filler tokens attend only to themselves and are never read.

:func:`pool_packed` turns the packed hidden states into what :func:`repro.training.heads.head_inputs` gives on
padded ones: each sequence's last state, its mean (one ``[n, rows * width]`` averaging matmul per layer), or
its token states unpacked into a right-padded ``[n, T, d]`` batch (model 4's head).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from repro.training.heads import HEAD_INPUTS


@dataclass
class Packed:
    """Sequences laid out in rows: ``ids``/``positions`` [rows, width], the 4-D boolean ``mask``
    [rows, 1, width, width] (True = may attend), and where each input sequence sits (``row``, ``start``,
    ``length``, in input order)."""

    ids: torch.Tensor
    positions: torch.Tensor
    mask: torch.Tensor
    row: torch.Tensor
    start: torch.Tensor
    length: torch.Tensor

    @property
    def tokens(self) -> int:
        """Real tokens (filler excluded)."""
        return int(self.length.sum())

    def to(self, device) -> Packed:
        return Packed(*(t.to(device) for t in (self.ids, self.positions, self.mask, self.row, self.start,
                                                self.length)))


def assign_rows(lengths: Sequence[int], row_tokens: int) -> list[list[int]]:
    """First-fit decreasing: sequence indices per row, each row's lengths summing to at most ``row_tokens``
    (a sequence longer than that gets a row of its own)."""
    rows: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        for r, free in enumerate(room):
            if lengths[i] <= free:
                rows[r].append(i)
                room[r] -= lengths[i]
                break
        else:
            rows.append([i])
            room.append(row_tokens - lengths[i])
    return rows


ROW_TOKENS = 64  # narrow rows: the fastest no-grad packed forward on this CPU (64: 333, 256: 297, 512: 221 tok/s)


def pack(sequences: Sequence[Sequence[int]], pad: int, causal: bool, row_tokens: int = ROW_TOKENS) -> Packed:
    """Pack token-id lists into rows of at most ``row_tokens`` tokens with a block-diagonal mask."""
    if not sequences:
        raise ValueError("nothing to pack")
    lengths = [len(s) for s in sequences]
    if min(lengths) < 1:
        raise ValueError("cannot pack an empty sequence")
    layout = assign_rows(lengths, row_tokens)
    width = max(sum(lengths[i] for i in members) for members in layout)
    ids = torch.full((len(layout), width), pad, dtype=torch.long)
    positions = torch.zeros((len(layout), width), dtype=torch.long)
    segment = torch.full((len(layout), width), -1, dtype=torch.long)
    row, start = torch.zeros(len(sequences), dtype=torch.long), torch.zeros(len(sequences), dtype=torch.long)
    for r, members in enumerate(layout):
        offset = 0
        for i in members:
            n = lengths[i]
            ids[r, offset:offset + n] = torch.as_tensor(list(sequences[i]), dtype=torch.long)
            positions[r, offset:offset + n] = torch.arange(n)
            segment[r, offset:offset + n] = i
            row[i], start[i] = r, offset
            offset += n
    same = segment[:, :, None] == segment[:, None, :]
    same &= segment[:, :, None] >= 0
    if causal:
        same &= torch.ones(width, width, dtype=torch.bool).tril()[None]
    same |= torch.eye(width, dtype=torch.bool)[None]  # filler attends to itself only (no empty softmax rows)
    return Packed(ids, positions, same[:, None], row, start, torch.as_tensor(lengths, dtype=torch.long))


def packed_hidden_states(backbone, packed: Packed) -> Sequence[torch.Tensor]:
    """All hidden states ([rows, width, d] each, index 0 = embeddings) of the packed rows, in ONE decoder
    forward: the block mask is passed as the decoder's 4-D attention mask (used as is by the llama, gemma3 and
    qwen2 decoders), the restarted positions as ``position_ids``."""
    out = backbone.decoder(input_ids=packed.ids, position_ids=packed.positions, attention_mask=packed.mask,
                           output_hidden_states=True, use_cache=False)
    return out.hidden_states


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
