"""Texts -> pooled hidden states of every layer, from ONE decoder forward pass per batch.

* never computes ``lm_head`` (the decoder alone runs: :meth:`Backbone.hidden_states`);
* prompt templates from :mod:`repro.core.prompts`, tokenized piece by piece so that the text slot can be
  truncated without ever cutting the prompt, and so that Echo's second copy has exact positions;
* poolings: ``last`` (final token; EOS if the prompt appends it) and ``mean`` (masked mean, from the
  prompt's ``mean_from_copy`` onwards: Echo pools its second copy plus the final token);
* unique texts are sorted by token length; short ones are packed padding-free into rows (positions restarted,
  a block-diagonal mask: :mod:`repro.core.packing`), long ones batched by a token budget, so padding is small;
* results are cached on disk in chunks keyed by everything that changes them (backbone identity and
  revision, attention mode, prompt, instruction, poolings, layers, max length, truncation, the chunk's
  texts), written atomically: a killed run resumes at the first missing chunk, a changed setting never
  reads a stale file. The same call twice gives bit-identical arrays;
* several processes (``torchrun``, :mod:`repro.core.distributed`): the chunks still to compute are dealt to the
  ranks in turn, each rank writes its own chunks, and after a barrier every rank reads the others' from the cache
  and returns the full array in input order, bit-identical to one process with the same threads per process.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from repro.core.backbones import Backbone
from repro.core.distributed import barrier, world
from repro.core.inference import run_in_order
from repro.core.packing import ROW_TOKENS, pack, packed_hidden_states
from repro.core.prompts import get_prompt
from repro.core.tokenization import Tokenized, Tokenizer, pad_id
from repro.store.atomic import write_json, write_npy
from repro.store.identity import config_identity
from repro.store.paths import states_dir

POOLINGS = ("last", "mean")
TRUNCATIONS = ("head", "head_tail")
TOKENIZATIONS = ("pieces", "official")
ENCODER_VERSION = 1  # bump when a change to this module changes its output
CHUNK_SIZE = 2048  # texts per cache file


@dataclass(frozen=True)
class EncodeConfig:
    """Everything besides the backbone and the texts that determines the states."""

    prompt: str = "none"
    poolings: tuple[str, ...] = POOLINGS
    max_length: int = 512
    truncation: str = "head"  # "head": keep the first tokens; "head_tail": first and last halves
    instruction: str = ""
    layers: tuple[int, ...] | None = None  # hidden-state indices (0 = embeddings); None = all
    # "pieces": the template's literal pieces and the text tokenized apart (the book's earlier runs); "official": as
    # EmbedFilter's official scripts do: a one-slot template (PromptEOL) filled and tokenized in ONE call (the text
    # truncated and the template re-tokenized when too long, so the prompt is never cut); Echo's pieces with BOS
    # always in front and each copy of the text cut to its first ``max_length`` tokens
    tokenization: str = "pieces"

    ADDED_LATER = ("tokenization",)  # not in the keys while at its default (repro.store.identity)

    def __post_init__(self):
        get_prompt(self.prompt)
        bad = [p for p in self.poolings if p not in POOLINGS]
        if bad or not self.poolings:
            raise ValueError(f"unknown pooling {bad or '(none given)'}; valid: {', '.join(POOLINGS)}")
        if self.truncation not in TRUNCATIONS:
            raise ValueError(f"unknown truncation '{self.truncation}'; valid: {', '.join(TRUNCATIONS)}")
        if self.tokenization not in TOKENIZATIONS:
            raise ValueError(f"unknown tokenization '{self.tokenization}'; valid: {', '.join(TOKENIZATIONS)}")
        if not isinstance(self.max_length, int) or self.max_length < 2:
            raise ValueError(f"max_length must be an integer >= 2, got {self.max_length!r}")


def _span_means(flat: torch.Tensor, starts: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
    """[L, n, d]: the mean of ``flat`` ([L, positions, d]) over each item's positions ``starts[i]:ends[i]``, by a
    segment sum (index_add over the positions inside the spans: L x positions x d, not a dense averaging matmul)."""
    counts = ends - starts
    segment = torch.repeat_interleave(torch.arange(len(starts), device=flat.device), counts)
    offsets = torch.arange(int(counts.sum()), device=flat.device) - torch.repeat_interleave(
        torch.cumsum(counts, 0) - counts, counts)
    positions = torch.repeat_interleave(starts, counts) + offsets
    sums = torch.zeros((flat.shape[0], len(starts), flat.shape[2]), dtype=flat.dtype, device=flat.device)
    sums.index_add_(1, segment, flat[:, positions])
    return sums / counts[None, :, None].to(flat.dtype)


def _pooled(config: EncodeConfig, flat: torch.Tensor, starts: torch.Tensor, ends: torch.Tensor
            ) -> dict[str, np.ndarray]:
    """The pooled states ``{pooling: [L, n, d]}`` of n items: ``flat`` is [L, positions, d]; an item's mean-pooling
    span is ``starts:ends`` and its last state is at ``ends - 1``."""
    out = {}
    if "last" in config.poolings:
        out["last"] = flat[:, ends - 1].cpu().numpy()
    if "mean" in config.poolings:
        out["mean"] = _span_means(flat, starts, ends).cpu().numpy()
    return out


def _padded(backbone: Backbone, items: list[Tokenized], config: EncodeConfig, layers: list[int],
            group: list[int]) -> dict[str, np.ndarray]:
    """The padded forward of ``group``: its items right-padded to the longest."""
    device = next(backbone.model.parameters()).device
    pad = pad_id(backbone.tokenizer)
    width = max(len(items[i].ids) for i in group)
    ids = torch.full((len(group), width), pad, dtype=torch.long)
    mask = torch.zeros((len(group), width), dtype=torch.long)
    for row, i in enumerate(group):
        ids[row, :len(items[i].ids)] = torch.tensor(items[i].ids)
        mask[row, :len(items[i].ids)] = 1
    ids, mask = ids.to(device), mask.to(device)
    hidden = backbone.hidden_states(ids, mask)
    flat = torch.stack([hidden[layer] for layer in layers]).float().flatten(1, 2)  # [L, B * T, d]
    begin = torch.arange(len(group), device=device) * width
    starts = begin + torch.tensor([items[i].mean_start for i in group], device=device)
    return _pooled(config, flat, starts, begin + mask.sum(1))


def _packed(backbone: Backbone, items: list[Tokenized], config: EncodeConfig, layers: list[int], row_tokens: int,
            group: list[int]) -> dict[str, np.ndarray]:
    """The padding-free forward of ``group`` (:mod:`repro.core.packing`): items of at most ``row_tokens`` tokens side
    by side in rows, positions restarted, a block-diagonal mask."""
    device = next(backbone.model.parameters()).device
    packed = pack([items[i].ids for i in group], pad_id(backbone.tokenizer), backbone.attention == "causal",
                  row_tokens).to(device)
    hidden = packed_hidden_states(backbone, packed)
    flat = torch.stack([hidden[layer] for layer in layers]).float().flatten(1, 2)  # [L, rows * width, d]
    begin = packed.row * packed.ids.shape[1] + packed.start
    starts = begin + torch.tensor([items[i].mean_start for i in group], device=device)
    return _pooled(config, flat, starts, begin + packed.length)


def _forward_pooled(backbone: Backbone, items: list[Tokenized], config: EncodeConfig, layers: list[int],
                    batch_tokens: int, max_batch: int, progress: tqdm | None,
                    row_tokens: int | None = ROW_TOKENS) -> dict[str, np.ndarray]:
    """Every layer's pooled states of ``items``, ONE decoder forward per batch (:func:`repro.core.inference.run_in_order`):
    items of at most ``row_tokens`` tokens packed padding-free (:func:`_packed`, ``batch_tokens // row_tokens`` rows
    per forward), longer ones (or all, with ``row_tokens=None``) padded in batches of similar length
    (:func:`_padded`). Both give the same states within float rounding (tested)."""
    d = backbone.hidden_size
    out = {p: np.zeros((len(layers), len(items), d), dtype=np.float32) for p in config.poolings}
    short = [i for i, t in enumerate(items) if row_tokens is not None and len(t.ids) <= row_tokens]
    long = [i for i, t in enumerate(items) if row_tokens is None or len(t.ids) > row_tokens]
    for subset, grouping in ((long, "padded"), (short, "rows")):
        if not subset:
            continue
        mine = [items[i] for i in subset]
        forward = (partial(_padded, backbone, mine, config, layers) if grouping == "padded"
                   else partial(_packed, backbone, mine, config, layers, row_tokens))
        pooled = run_in_order([len(t.ids) for t in mine], forward, grouping=grouping, batch_tokens=batch_tokens,
                              max_batch=max_batch, row_tokens=row_tokens or ROW_TOKENS, axis=1, progress=progress)
        for p, array in pooled.items():
            out[p][:, subset] = array
    return out


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:20]


def settings_key(backbone: Backbone, config: EncodeConfig) -> dict:
    prompt = get_prompt(config.prompt)
    weights = next(backbone.model.parameters())
    settings = {
        "backbone": backbone.identity,
        "prompt": asdict(prompt),
        "config": config_identity(config),
        "encoder_version": ENCODER_VERSION,
        "dtype": str(weights.dtype),
    }
    if weights.device.type != "cpu":  # (CPU keys predate the device: they stay as they were)
        settings["device"] = weights.device.type
    return settings


def check_texts(texts) -> list[str]:
    """``texts`` as a list of str; a bare string (which would be read as one text per character), a non-iterable
    or a non-str item raises TypeError."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be a list of strings, got a single string: wrap it in a list ([text])")
    try:
        texts = list(texts)
    except TypeError:
        raise TypeError(f"texts must be a list of strings, got {type(texts).__name__}") from None
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"texts must be str, got an item of type {type(text).__name__}")
    return texts


_MEMO: OrderedDict[str, dict[str, np.ndarray]] = OrderedDict()
_MEMO_SIZE = 3


def forget_recent() -> None:
    """Drop the in-memory memo of the last few encodes (a cold encode then reads only the states cache)."""
    _MEMO.clear()


def encode(backbone: Backbone, texts: Sequence[str], config: EncodeConfig | None = None, *,
           cache: bool = True, cache_root: Path | None = None, batch_tokens: int = 8192, max_batch: int = 64,
           progress: bool = True, select: tuple[str, int] | None = None,
           chunk_size: int | None = None, row_tokens: int | None = ROW_TOKENS) -> dict[str, np.ndarray]:
    """Pooled states ``{pooling: array[layers, len(texts), hidden]}`` (float32), in the order of ``texts``.

    ``layers`` are hidden-state indices: 0 is the embedding output, ``num_layers`` the final
    (post-norm) state. All layers come from one forward pass (and are all cached).
    ``select=(pooling, position)``: return only that pooling and that position of the config's layer list
    (``{pooling: array[1, len(texts), hidden]}``), without copying the other layers. ``chunk_size``: texts per
    cache file (default :data:`CHUNK_SIZE`), and the unit of work of each rank when several processes encode (they
    need ``cache=True``). ``row_tokens``: texts of at most this many tokens are packed padding-free into rows of
    that width (:mod:`repro.core.packing`), longer ones padded in batches of similar length; None pads every batch.
    Both paths give the same states within float rounding, so the setting is not part of the cache key.
    """
    if row_tokens is not None and (isinstance(row_tokens, bool) or not isinstance(row_tokens, int) or row_tokens < 2):
        raise ValueError(f"row_tokens must be an integer >= 2 or None, got {row_tokens!r}")
    config = config or EncodeConfig()
    texts = check_texts(texts)
    prompt = get_prompt(config.prompt)
    layers = list(range(backbone.num_layers + 1)) if config.layers is None else list(config.layers)
    bad = [layer for layer in layers if not 0 <= layer <= backbone.num_layers]
    if bad:
        raise ValueError(f"layers {bad} out of range 0..{backbone.num_layers}")
    d = backbone.hidden_size
    if not texts:
        return {p: np.zeros((len(layers), 0, d), dtype=np.float32) for p in config.poolings}

    chunk_size = CHUNK_SIZE if chunk_size is None else chunk_size
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    rank, size = world()
    if size > 1 and not cache:
        raise ValueError("several processes share their chunks through the cache: encode with cache=True")
    settings = settings_key(backbone, config)
    unique = sorted(set(texts))
    memo_key = _hash([settings, _hash(unique)])
    if cache and memo_key in _MEMO:
        _MEMO.move_to_end(memo_key)
        states = _MEMO[memo_key]
    else:
        tokenize = Tokenizer(backbone.tokenizer, prompt, config)
        tokenized = [tokenize(t) for t in unique]
        order = sorted(range(len(unique)), key=lambda i: (-len(tokenized[i].ids), unique[i]))
        folder = (cache_root or states_dir()) / _hash(settings)
        if cache:
            write_json(folder / "settings.json", settings)
        states = {p: np.zeros((len(layers), len(unique), d), dtype=np.float32) for p in config.poolings}
        chunks = [order[i:i + chunk_size] for i in range(0, len(order), chunk_size)]
        keys = [_hash([unique[i] for i in chunk]) for chunk in chunks]
        files = [{p: folder / f"{key}.{p}.npy" for p in config.poolings} for key in keys]
        done = [cache and all(f.is_file() for f in chunk_files.values()) for chunk_files in files]
        todo = [i for i, finished in enumerate(done) if not finished]
        if size > 1 and todo:
            barrier()  # every rank has listed the missing chunks before any rank writes one
        mine = set(todo[rank::size])  # the missing chunks, dealt to the ranks in turn
        for i, finished in enumerate(done):
            if finished:
                for p, f in files[i].items():
                    states[p][:, chunks[i]] = np.load(f)
        todo_tokens = sum(len(tokenized[j].ids) for i in mine for j in chunks[i])
        label = f"encode {backbone.name}" + (f" [rank {rank}/{size}]" if size > 1 else "")
        bar = tqdm(total=todo_tokens, unit="tok", desc=label, disable=not progress or not todo_tokens)
        for i in sorted(mine):
            pooled = _forward_pooled(backbone, [tokenized[j] for j in chunks[i]], config, layers, batch_tokens,
                                     max_batch, bar, row_tokens)
            for p, array in pooled.items():
                states[p][:, chunks[i]] = array
                if cache:
                    write_npy(files[i][p], array)
        if size > 1 and todo:
            barrier()  # every rank has written its chunks
            for i in todo:
                if i not in mine:
                    for p, f in files[i].items():
                        states[p][:, chunks[i]] = np.load(f)
        bar.close()
        if cache:
            _MEMO[memo_key] = states
            while len(_MEMO) > _MEMO_SIZE:
                _MEMO.popitem(last=False)
    position = {t: i for i, t in enumerate(unique)}
    index = np.fromiter((position[t] for t in texts), dtype=np.int64, count=len(texts))
    if select is not None:
        pooling, layer_position = select
        return {pooling: states[pooling][layer_position][index][None]}
    return {p: array[:, index] for p, array in states.items()}


def count_tokens(backbone: Backbone, texts: Sequence[str], config: EncodeConfig | None = None) -> int:
    """Tokens the encoder would run for these texts (after prompt, truncation and de-duplication)."""
    config = config or EncodeConfig()
    tokenize = Tokenizer(backbone.tokenizer, get_prompt(config.prompt), config)
    return sum(len(tokenize(t).ids) for t in set(texts))
