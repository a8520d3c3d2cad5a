"""One interface for every embedding model of the book: ``Embedder.encode(texts) -> float32 [n, d]``.

An :class:`Embedder` has a ``dim``, an ``identity`` (a string naming everything that changes its embeddings,
used for caching and in mteb's model metadata) and ``encode(texts, *, role="query"|"document",
instruction=None)``. ``role`` tells queries from retrieval documents (AutoRegEmbed embeds documents with its
passage prompt); ``instruction`` is a task instruction (E5-style query instructions) for the embedders whose
prompt has an ``{instruction}`` slot.

Implementations:

* :class:`StatesEmbedder`: one layer and one pooling of a backbone's states, through the all-layer, cached
  :func:`repro.core.encode.encode` (the fast path: every layer of every pooling from one forward);
* :class:`MappedEmbedder`: a linear map (an EmbedFilter projection, whitening, a random projection) applied to
  any Embedder's output;
* :class:`CachedEmbedder`: any Embedder's outputs cached on disk (a trained model's embeddings, so that its
  filtered variants never re-encode);
* trained models: :class:`repro.training.contrastive.TrainedEmbedder` (the five designs and the contrastive
  baselines) and :class:`repro.autoregembed.model.AutoRegEmbedder`.

:class:`repro.core.evaluate.MtebEncoder` wraps any Embedder for ``mteb.evaluate``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from repro.core.backbones import Backbone
from repro.core.encode import CHUNK_SIZE, EncodeConfig, _hash, check_texts, encode
from repro.store.atomic import write_npy
from repro.store.paths import states_dir

ROLES = ("query", "document")


class Embedder(ABC):
    """Texts -> L2-normalisable float32 embeddings ``[n, dim]``."""

    @property
    @abstractmethod
    def dim(self) -> int: ...

    @property
    @abstractmethod
    def identity(self) -> str: ...

    @abstractmethod
    def embed(self, texts: list[str], role: str, instruction: str | None) -> np.ndarray:
        """The embeddings of checked ``texts`` (subclasses implement this; callers use :meth:`encode`)."""

    def encode(self, texts, *, role: str = "query", instruction: str | None = None) -> np.ndarray:
        texts = check_texts(texts)
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; valid: {', '.join(ROLES)}")
        if instruction is not None and not isinstance(instruction, str):
            raise TypeError(f"instruction must be a str or None, got {type(instruction).__name__}")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.asarray(self.embed(texts, role, instruction), dtype=np.float32)
        if out.shape != (len(texts), self.dim):
            raise RuntimeError(f"{self.identity} returned shape {out.shape}, expected {(len(texts), self.dim)}")
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identity}, dim={self.dim})"


class StatesEmbedder(Embedder):
    """``states[pooling][layer]`` of :func:`repro.core.encode.encode` for ``config`` (cached on disk and in
    memory; ``layer`` indexes the config's layer list, -1 = the last listed). ``instruction`` fills the
    prompt's ``{instruction}`` slot (a new cache key) instead of ``config.instruction``."""

    def __init__(self, backbone: Backbone, config: EncodeConfig, pooling: str = "last", layer: int = -1,
                 progress: bool = False):
        if pooling not in config.poolings:
            raise ValueError(f"pooling '{pooling}' was not encoded; config has {config.poolings}")
        layers = list(range(backbone.num_layers + 1)) if config.layers is None else list(config.layers)
        layer = layers[layer] if layer < 0 else layer
        if layer not in layers:
            raise ValueError(f"layer {layer} was not encoded; config has layers {layers}")
        self.backbone, self.config, self.pooling = backbone, config, pooling
        self.layer, self.position, self.progress = layer, layers.index(layer), progress

    @property
    def dim(self) -> int:
        return self.backbone.hidden_size

    @property
    def identity(self) -> str:
        return f"{self.backbone.identity}|{self.config.prompt}|{self.pooling}|L{self.layer}"

    def embed(self, texts: list[str], role: str, instruction: str | None) -> np.ndarray:
        config = self.config if instruction is None else replace(self.config, instruction=instruction)
        states = encode(self.backbone, texts, config, progress=self.progress, select=(self.pooling, self.position))
        return states[self.pooling][0]


class MappedEmbedder(Embedder):
    """``transform(inner.encode(texts))``: a map (``transform.dims`` output dims) applied to another Embedder's
    embeddings, e.g. an EmbedFilter projection on cached states (never a re-encode)."""

    def __init__(self, inner: Embedder, transform: Callable[[np.ndarray], np.ndarray], name: str):
        self.inner, self.transform, self.name = inner, transform, name

    @property
    def dim(self) -> int:
        return int(getattr(self.transform, "dims", self.inner.dim))

    @property
    def identity(self) -> str:
        return f"{self.inner.identity}|{self.name}"

    def embed(self, texts: list[str], role: str, instruction: str | None) -> np.ndarray:
        return self.transform(self.inner.encode(texts, role=role, instruction=instruction))


class CachedEmbedder(Embedder):
    """``inner``'s embeddings cached on disk in chunks of unique texts, keyed by ``key`` (everything that changes
    ``inner``'s output: for a trained model its configuration, max length and weights digest), the role, the
    instruction and the chunk's texts; written atomically, so a killed evaluation resumes. Other attributes are
    ``inner``'s (``digest``, ``model``...)."""

    def __init__(self, inner: Embedder, key: str, chunk_size: int = CHUNK_SIZE):
        self.inner, self.key, self.chunk_size = inner, key, chunk_size

    def __getattr__(self, name):
        if name in ("inner", "key", "chunk_size"):  # not set yet (unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def identity(self) -> str:
        return self.inner.identity

    def embed(self, texts: list[str], role: str, instruction: str | None) -> np.ndarray:
        unique = sorted(set(texts))
        folder = states_dir() / "embedder" / _hash([self.key, role, instruction])
        out = np.zeros((len(unique), self.dim), dtype=np.float32)
        for start in range(0, len(unique), self.chunk_size):
            chunk = unique[start:start + self.chunk_size]
            path = folder / f"{_hash(chunk)}.npy"
            if path.is_file():
                out[start:start + len(chunk)] = np.load(path)
                continue
            vectors = self.inner.encode(chunk, role=role, instruction=instruction)
            write_npy(path, vectors)
            out[start:start + len(chunk)] = vectors
        position = {t: i for i, t in enumerate(unique)}
        return out[[position[t] for t in texts]]
