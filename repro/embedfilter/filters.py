"""EmbedFilter: the unembedding matrix as a feature lens, and the baselines it is compared with.

The SVD of the unembedding matrix ``W_U = lm_head.weight`` (vocab x d) is ``U diag(s) Vh`` with the
rows of ``Vh`` (d x d, orthonormal) in descending singular value. EmbedFilter keeps ``k = d // ratio``
of those rows and maps a final (post-norm) hidden state ``h`` to ``Vh[kept] @ h``. The map is linear,
so applying it to every token state and then pooling equals pooling and then applying it: the book
filters cached pooled states and never re-encodes.

Filter types are named by what they *remove*, as in the official code (github.com/CentreChen/EmbFilter):

* ``edge`` keeps the centred window ``[(d-k)//2, (d-k)//2 + k)`` (removes both ends; the default);
* ``tail`` keeps the k largest singular directions (removes the tail);
* ``head`` keeps the k smallest (removes the head);
* ``mid``  keeps k//2 from the top and k - k//2 from the bottom (removes the middle);
* ``rand`` keeps k seeded random directions.

Baselines at the same k: ``truncate`` (the first k coordinates, Matryoshka-style), ``whiten``
(PCA whitening fitted on NLI sentences, scikit-learn ``PCA(whiten=True)``) and ``randproj`` (a
scikit-learn ``GaussianRandomProjection``). Every filter is a :class:`LinearMap`, a callable on
``[n, d]`` arrays.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.decomposition import PCA
from sklearn.random_projection import GaussianRandomProjection

from repro.core.encode import EncodeConfig, encode
from repro.store.atomic import atomic_path
from repro.store.paths import cache_dir

FILTER_TYPES = ("edge", "tail", "head", "mid", "rand")
BASELINES = ("truncate", "whiten", "randproj")
RATIOS = (1, 2, 4, 8)


def kept_dims(d: int, ratio: int) -> int:
    """k = d // ratio (the official code's rule)."""
    if isinstance(ratio, bool) or not isinstance(ratio, (int, np.integer)) or ratio < 1:
        raise ValueError(f"filter ratio must be a positive integer, got {ratio!r}")
    if ratio > d:
        raise ValueError(f"filter ratio {ratio} keeps no dimension of a {d}-dimensional state")
    return d // int(ratio)


def filter_indices(kind: str, d: int, k: int, seed: int = 0) -> np.ndarray:
    """Indices of the rows of ``Vh`` (descending singular value) that a filter type keeps."""
    if not 1 <= k <= d:
        raise ValueError(f"k must be in 1..{d}, got {k}")
    if kind == "edge":
        start = (d - k) // 2
        return np.arange(start, start + k)
    if kind == "tail":
        return np.arange(k)
    if kind == "head":
        return np.arange(d - k, d)
    if kind == "mid":
        top = k // 2
        return np.concatenate([np.arange(top), np.arange(d - (k - top), d)])
    if kind == "rand":
        return np.sort(np.random.default_rng(seed).choice(d, size=k, replace=False))
    raise ValueError(f"unknown filter type '{kind}'; valid: {', '.join(FILTER_TYPES)}")


@dataclass(frozen=True)
class Spectrum:
    """Singular values (descending) and right singular vectors ``vh`` [d, d] of an unembedding matrix."""

    singular_values: np.ndarray
    vh: np.ndarray
    source: str


def unembedding_matrix(backbone) -> torch.Tensor:
    """``lm_head.weight`` (vocab x d). Qwen's untied output matrix is used, not the input embeddings."""
    head = backbone.model.get_output_embeddings()
    if head is None:
        raise ValueError(f"{backbone.name} has no lm_head (output embeddings)")
    return head.weight.detach()


def svd_spectrum(weight: torch.Tensor | np.ndarray, source: str = "") -> Spectrum:
    """``torch.linalg.svd`` of a (vocab x d) matrix, as the official code computes it (fp32)."""
    w = torch.as_tensor(weight, dtype=torch.float32)
    if w.ndim != 2 or w.shape[0] < w.shape[1]:
        raise ValueError(f"expected a (vocab x d) matrix with vocab >= d, got shape {tuple(w.shape)}")
    _, s, vh = torch.linalg.svd(w, full_matrices=False)
    return Spectrum(s.numpy().astype(np.float32), vh.numpy().astype(np.float32), source)


def unembedding_spectrum(backbone, cache: bool = True) -> Spectrum:
    """The SVD of the backbone's ``lm_head.weight``, cached on disk keyed by the weights' hash, and kept on
    the backbone object while its weight tensor is unchanged (same tensor, same in-place version), so a
    sweep over many tasks hashes the matrix once."""
    head = unembedding_matrix(backbone)
    memo_key = (head.data_ptr(), head._version, tuple(head.shape))
    memo = backbone.extra.get("unembedding_spectrum") if cache else None
    if memo is not None and memo[0] == memo_key:
        return memo[1]
    spectrum = _unembedding_spectrum(backbone, head, cache)
    if cache:
        backbone.extra["unembedding_spectrum"] = (memo_key, spectrum)
    return spectrum


def _unembedding_spectrum(backbone, head: torch.Tensor, cache: bool) -> Spectrum:
    weight = head.float().cpu().contiguous()
    digest = hashlib.sha256(weight.numpy().tobytes()).hexdigest()[:20]
    path = cache_dir() / "spectra" / f"{backbone.name}-{digest}.npz"
    if cache and path.is_file():
        data = np.load(path)
        return Spectrum(data["singular_values"], data["vh"], f"{backbone.identity}:{digest}")
    spectrum = svd_spectrum(weight, f"{backbone.identity}:{digest}")
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as handle:
                np.savez(handle, singular_values=spectrum.singular_values, vh=spectrum.vh)
    return spectrum


@dataclass(frozen=True)
class LinearMap:
    """``x -> (x - offset) @ matrix`` on ``[n, d]`` arrays (offset 0 for the purely linear filters)."""

    name: str
    matrix: np.ndarray  # [d, k]
    offset: np.ndarray | None = None

    @property
    def dims(self) -> int:
        return int(self.matrix.shape[1])

    def __call__(self, states: np.ndarray) -> np.ndarray:
        states = np.asarray(states, dtype=np.float32)
        if states.shape[-1] != self.matrix.shape[0]:
            raise ValueError(f"{self.name}: expected states of width {self.matrix.shape[0]}, got {states.shape[-1]}")
        if self.offset is not None:
            states = states - self.offset
        return states @ self.matrix


def embedfilter(spectrum: Spectrum, kind: str = "edge", ratio: int = 2, seed: int = 0) -> LinearMap:
    d = spectrum.vh.shape[1]
    rows = filter_indices(kind, d, kept_dims(d, ratio), seed)
    return LinearMap(f"{kind}/{ratio}", np.ascontiguousarray(spectrum.vh[rows].T))


def truncation(d: int, ratio: int) -> LinearMap:
    k = kept_dims(d, ratio)
    return LinearMap(f"truncate/{ratio}", np.eye(d, k, dtype=np.float32))


def whitening(fit_states: np.ndarray, ratio: int, seed: int = 0) -> LinearMap:
    """PCA whitening to k dims fitted on ``fit_states`` (e.g. NLI sentences encoded the same way)."""

    fit_states = np.asarray(fit_states, dtype=np.float64)
    d = fit_states.shape[1]
    k = kept_dims(d, ratio)
    if fit_states.shape[0] < k:
        raise ValueError(f"whitening to {k} dims needs at least {k} fitting states, got {fit_states.shape[0]}")
    pca = PCA(n_components=k, whiten=True, random_state=seed).fit(fit_states)
    matrix = pca.components_.T / np.sqrt(pca.explained_variance_)[None, :]
    return LinearMap(f"whiten/{ratio}", matrix.astype(np.float32), pca.mean_.astype(np.float32))


def random_projection(d: int, ratio: int, seed: int = 0) -> LinearMap:

    k = kept_dims(d, ratio)
    projection = GaussianRandomProjection(n_components=k, random_state=seed).fit(np.zeros((1, d)))
    return LinearMap(f"randproj/{ratio}", np.asarray(projection.components_, dtype=np.float32).T)


def parse_variant(name: str) -> tuple[str, int | None]:
    """``"raw"`` -> ("raw", None); ``"edge/2"`` -> ("edge", 2)."""
    if name == "raw":
        return "raw", None
    kind, _, ratio = name.partition("/")
    if kind not in FILTER_TYPES + BASELINES or not ratio.isdigit():
        raise ValueError(f"unknown filter variant '{name}'; use 'raw' or '<type>/<ratio>' with type in "
                         f"{', '.join(FILTER_TYPES + BASELINES)}")
    return kind, int(ratio)


def make_filter(name: str, *, spectrum: Spectrum | None = None, whitening_states: np.ndarray | None = None,
                d: int | None = None, seed: int = 0) -> LinearMap | None:
    """The map for a variant name (``None`` for ``raw``)."""
    kind, ratio = parse_variant(name)
    if kind == "raw":
        return None
    if kind in FILTER_TYPES:
        if spectrum is None:
            raise ValueError(f"{name} needs the unembedding spectrum")
        return embedfilter(spectrum, kind, ratio, seed)
    if kind == "whiten":
        if whitening_states is None:
            raise ValueError(f"{name} needs states to fit the whitening on")
        return whitening(whitening_states, ratio, seed)
    d = d or (spectrum.vh.shape[1] if spectrum is not None else None)
    if d is None:
        raise ValueError(f"{name} needs the state width d")
    return truncation(d, ratio) if kind == "truncate" else random_projection(d, ratio, seed)


def sweep_variants(ratios: Sequence[int] = RATIOS, ablation_ratio: int = 2) -> list[str]:
    """raw, edge at every ratio, and every other type and baseline at ``ablation_ratio``."""
    names = ["raw"] + [f"edge/{r}" for r in ratios]
    names += [f"{kind}/{ablation_ratio}" for kind in FILTER_TYPES + BASELINES if kind != "edge"]
    return list(dict.fromkeys(names))


@dataclass
class Normalized:
    """``map`` (or the identity, for raw states) followed by L2 normalisation of each row: the official
    EmbedFilter evaluation normalises embeddings for every task but classification."""

    inner: LinearMap | None
    width: int

    @property
    def dims(self) -> int:
        return self.inner.dims if self.inner is not None else self.width

    def __call__(self, states: np.ndarray) -> np.ndarray:
        out = np.asarray(states if self.inner is None else self.inner(states), dtype=np.float32)
        norms = np.linalg.norm(out, axis=-1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


# ---------------------------------------------------------------------------------- the filtered embedding

PROMPT_POOLING = {"prompteol": "last", "prompteol-summarize": "last", "echo": "mean"}  # what each prompt pools


def encode_config(backbone, prompt: str, max_length: int = 512, tokenization: str = "pieces") -> EncodeConfig:
    """The final (post-norm) state only, pooled as the prompt requires, head+tail truncation; ``tokenization``:
    "pieces" (the book's earlier runs) or "official" (EmbedFilter's official scripts: :class:`EncodeConfig`)."""
    if prompt not in PROMPT_POOLING:
        raise ValueError(f"EmbedFilter prompts are {', '.join(PROMPT_POOLING)}; got '{prompt}'")
    return EncodeConfig(prompt=prompt, poolings=(PROMPT_POOLING[prompt],), max_length=max_length,
                        truncation="head_tail", layers=(backbone.num_layers,), tokenization=tokenization)


def filters_for(backbone, config: EncodeConfig, variants: Sequence[str], seed: int = 0,
                whiten_sentences: int = 2000, progress: bool = False) -> dict[str, object]:
    """variant name -> map (``None`` for raw). The SVD is cached; whitening encodes NLI sentences once."""
    kinds = {parse_variant(v)[0] for v in variants}
    spectrum = unembedding_spectrum(backbone) if kinds - {"raw", "truncate", "randproj", "whiten"} else None
    fit = None
    if "whiten" in kinds:
        from repro.core.samples import nli_sentences  # whitening only: the front door (from_recipe) stays light

        states = encode(backbone, nli_sentences(whiten_sentences, seed), config, progress=progress)
        fit = states[config.poolings[0]][0]
    return {v: make_filter(v, spectrum=spectrum, whitening_states=fit, d=backbone.hidden_size, seed=seed)
            for v in variants}
