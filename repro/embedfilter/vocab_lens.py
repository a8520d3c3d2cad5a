"""The unembedding matrix as a lens: what embeddings say in vocabulary space, and where their variance lies.

* :func:`vocabulary_probe`: project sentence embeddings through ``lm_head`` before and after an
  EmbedFilter (the filtered state is mapped back into the hidden space, ``Vh_kᵀ Vh_k h``, then through
  ``W_U``), list the top tokens of example sentences, and relate each token's average logit to its
  frequency in a reference corpus (the data folder's WikiText-2 paragraphs and NLI sentences). The
  paper's claim: raw embeddings align with frequent, uninformative tokens and the filter removes that.
* :func:`spectrum_bands`: the singular values of ``W_U`` and the share of the embeddings' variance
  (centred) and energy (uncentred, which is what cosine similarity sees) in each band of singular
  directions.

Both are stored in ``results/embedfilter_lens/`` (small JSON) so the book renders without a model.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from scipy import stats

from repro.core.backbones import STORED_DTYPE, load_backbone
from repro.core.encode import TOKENIZATIONS, encode
from repro.core.samples import sentence_sample
from repro.core.stats import wilcoxon_over_tasks
from repro.embedfilter.filters import encode_config, filter_indices, kept_dims, unembedding_matrix, unembedding_spectrum
from repro.store.paths import data_jsonl
from repro.store.results import load_or_compute

EXPERIMENT = "embedfilter_lens"
CORPUS_FILES = ("train/unsup_text/wikitext2_raw_test_paragraphs.jsonl", "train/nli_triplets/snli_dev_test_triplets.jsonl")
EXAMPLES = ("A man is playing a guitar.", "The stock market fell sharply after the announcement.",
            "Scientists discovered a new species of frog in the rainforest.", "How do I reset my password?")


def corpus_texts() -> list[str]:
    """The reference corpus for token frequencies: WikiText-2 test paragraphs + NLI triplet sentences."""
    texts: list[str] = []
    for name in CORPUS_FILES:
        for row in data_jsonl(name, "token frequencies are counted on it"):
            texts += [row[k] for k in ("text", "anchor", "positive", "negative") if k in row]
    return texts


def token_frequencies(tokenizer, texts, vocab_size: int) -> np.ndarray:
    """How often each token id occurs when the corpus is tokenized (no special tokens)."""
    counts = np.zeros(vocab_size, dtype=np.int64)
    for start in range(0, len(texts), 512):
        for ids in tokenizer(list(texts[start:start + 512]), add_special_tokens=False)["input_ids"]:
            np.add.at(counts, np.asarray(ids, dtype=np.int64), 1)
    return counts


def subspace_projector(vh: np.ndarray, kind: str, ratio: int) -> np.ndarray:
    """``Vh_kᵀ Vh_k`` (d x d): the filter's kept subspace, expressed back in the hidden space."""
    rows = vh[filter_indices(kind, vh.shape[1], kept_dims(vh.shape[1], ratio))]
    return rows.T @ rows


def _mean_log_frequency_of_top(logits: np.ndarray, log_freq: np.ndarray, top: int) -> np.ndarray:
    idx = np.argpartition(-logits, top, axis=1)[:, :top]
    return log_freq[idx].mean(1)


def bootstrap_p(values) -> float:
    """Two-sided percentile-bootstrap p of "the statistic is 0" from its resampled values: twice the smaller tail
    share at or beyond 0, counted with the observed sample ((k + 1) / (n + 1)), at most 1."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    tail = min(int((values <= 0).sum()), int((values >= 0).sum()))
    return float(min(1.0, 2 * (tail + 1) / (n + 1)))


def _tokenized(params: dict, tokenization: str) -> dict:
    """``params`` keyed by the tokenization when it is not the book's earlier piece-wise one (whose stored keys
    predate the option and stay as they are)."""
    if tokenization not in TOKENIZATIONS:
        raise ValueError(f"unknown tokenization '{tokenization}'; valid: {', '.join(TOKENIZATIONS)}")
    return params if tokenization == "pieces" else params | {"tokenization": tokenization}


def vocabulary_probe(backbone_name: str, prompt: str = "prompteol", kind: str = "edge", ratio: int = 2,
                     n_sentences: int = 500, top: int = 20, n_resamples: int = 1000, seed: int = 0,
                     recompute: bool = False, tokenization: str = "pieces") -> dict:
    """Top tokens before/after filtering and the token-frequency alignment of the embeddings (stored); the
    bootstrap over sentences gives the raw correlation's and the raw - filtered difference's two-sided p
    (``per_token``: ``raw_p``, ``difference_p``; records stored before they were kept lack them)."""

    params = _tokenized({"backbone": backbone_name, "prompt": prompt, "filter": f"{kind}/{ratio}",
                         "n_sentences": n_sentences, "top": top, "n_resamples": n_resamples, "seed": seed,
                         "corpus": list(CORPUS_FILES), "sentences": "STS-B test (seeded sample)",
                         "examples": list(EXAMPLES)}, tokenization)

    def compute():
        start = time.perf_counter()
        backbone = load_backbone(backbone_name, dtype=STORED_DTYPE)
        config = encode_config(backbone, prompt, tokenization=tokenization)
        sentences = sentence_sample(n_sentences, seed)
        states = encode(backbone, list(EXAMPLES) + sentences, config, progress=False)[config.poolings[0]][0]
        w = unembedding_matrix(backbone).float().numpy()
        projector = subspace_projector(unembedding_spectrum(backbone).vh, kind, ratio)
        counts = token_frequencies(backbone.tokenizer, corpus_texts(), w.shape[0])
        seen = np.flatnonzero(counts > 0)
        log_freq = np.log(counts + 1.0)
        raw_logits = states @ w.T  # [n, V]
        filtered_logits = (states @ projector) @ w.T

        def top_tokens(logits):
            return [[backbone.tokenizer.decode([int(t)]) for t in np.argsort(-row)[:10]] for row in logits]

        examples = [{"sentence": s, "raw": r, "filtered": f} for s, r, f in
                    zip(EXAMPLES, top_tokens(raw_logits[:len(EXAMPLES)]), top_tokens(filtered_logits[:len(EXAMPLES)]))]
        raw_s, filt_s = raw_logits[len(EXAMPLES):], filtered_logits[len(EXAMPLES):]
        # per sentence: mean log corpus frequency of its top tokens (over the whole vocabulary)
        raw_top = _mean_log_frequency_of_top(raw_s, log_freq, top)
        filt_top = _mean_log_frequency_of_top(filt_s, log_freq, top)
        per_sentence = wilcoxon_over_tasks(raw_top, filt_top, unit="sentences")
        # per token (tokens seen in the corpus): average logit vs log frequency, Spearman
        rho_raw = stats.spearmanr(raw_s[:, seen].mean(0), log_freq[seen])[0]
        rho_filt = stats.spearmanr(filt_s[:, seen].mean(0), log_freq[seen])[0]
        rng = np.random.default_rng(seed)
        diffs, raws = [], []
        for _ in range(n_resamples):  # bootstrap over sentences: resample, recompute both correlations
            weights = np.bincount(rng.integers(0, len(sentences), len(sentences)), minlength=len(sentences))
            a = stats.spearmanr(weights @ raw_s[:, seen], log_freq[seen])[0]
            diffs.append(a - stats.spearmanr(weights @ filt_s[:, seen], log_freq[seen])[0])
            raws.append(a)
        low, high = np.percentile(diffs, [2.5, 97.5])
        top_freq_rank = {name: float(np.median(stats.rankdata(-counts, method="min")[np.argsort(-logits.mean(0))[:top]]))
                         for name, logits in (("raw", raw_s), ("filtered", filt_s))}
        bins = np.quantile(log_freq[seen], np.linspace(0, 1, 21))
        which = np.clip(np.searchsorted(bins, log_freq[seen], side="right") - 1, 0, 19)

        def binned(logits):  # mean of the z-scored average logit per corpus-frequency bin
            avg = logits[:, seen].mean(0)
            z = (avg - avg.mean()) / avg.std()
            return [float(z[which == i].mean()) if np.any(which == i) else None for i in range(20)]

        extra = {"examples": examples,
                 "frequency_bins": {"log_frequency_mid": ((bins[:-1] + bins[1:]) / 2).tolist(),
                                    "raw_z_logit": binned(raw_s), "filtered_z_logit": binned(filt_s)},
                 "per_sentence": {"raw_mean_log_freq_top": raw_top.tolist(), "filtered_mean_log_freq_top": filt_top.tolist(),
                                  "test": per_sentence},
                 "per_token": {"tokens_seen": int(len(seen)), "vocab": int(w.shape[0]), "spearman_raw": float(rho_raw),
                               "spearman_filtered": float(rho_filt), "difference_ci95": [float(low), float(high)],
                               "raw_p": bootstrap_p(raws), "difference_p": bootstrap_p(diffs),
                               "median_frequency_rank_of_top_mean_logit_tokens": top_freq_rank},
                 "corpus_tokens": int(counts.sum())}
        rows = pd.DataFrame([{"embedding": "raw", "spearman_logit_vs_log_frequency": rho_raw,
                              "mean_log_frequency_of_top_tokens": float(raw_top.mean())},
                             {"embedding": f"{kind}/{ratio}", "spearman_logit_vs_log_frequency": rho_filt,
                              "mean_log_frequency_of_top_tokens": float(filt_top.mean())}])
        return rows, {"seconds": time.perf_counter() - start}, extra

    return load_or_compute(EXPERIMENT, params, compute, recompute=recompute)


def spectrum_bands(backbone_name: str, prompt: str = "prompteol", n_sentences: int = 500, bands: int = 8,
                   seed: int = 0, recompute: bool = False, tokenization: str = "pieces") -> dict:
    """Singular values of ``W_U`` and the embeddings' variance / energy per band of singular directions."""

    params = _tokenized({"backbone": backbone_name, "prompt": prompt, "n_sentences": n_sentences, "bands": bands,
                         "seed": seed, "sentences": "STS-B test (seeded sample)", "kind": "spectrum"}, tokenization)

    def compute():
        start = time.perf_counter()
        backbone = load_backbone(backbone_name, dtype=STORED_DTYPE)
        config = encode_config(backbone, prompt, tokenization=tokenization)
        states = encode(backbone, sentence_sample(n_sentences, seed), config, progress=False)[config.poolings[0]][0]
        spectrum = unembedding_spectrum(backbone)
        coords = states.astype(np.float64) @ spectrum.vh.T.astype(np.float64)  # [n, d], descending sigma
        variance = coords.var(0)
        energy = (coords ** 2).mean(0)
        d = coords.shape[1]
        edges = np.linspace(0, d, bands + 1).astype(int)
        rows = [{"band": i + 1, "first_direction": int(lo), "last_direction": int(hi - 1),
                 "variance_share": float(variance[lo:hi].sum() / variance.sum()),
                 "energy_share": float(energy[lo:hi].sum() / energy.sum()),
                 "mean_singular_value": float(spectrum.singular_values[lo:hi].mean())}
                for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:]))]
        extra = {"singular_values": spectrum.singular_values.tolist(), "hidden_size": d,
                 "per_direction_variance": variance.astype(np.float32).tolist(),
                 "per_direction_energy": energy.astype(np.float32).tolist()}
        return pd.DataFrame(rows), {"seconds": time.perf_counter() - start}, extra

    return load_or_compute(EXPERIMENT, params, compute, recompute=recompute)


def removed_band_alignment(backbone_name: str, prompt: str = "prompteol", kind: str = "edge", ratio: int = 2,
                           n_sentences: int = 500, n_random: int = 1000, seed: int = 0, recompute: bool = False,
                           tokenization: str = "pieces") -> dict:
    """The paper's mechanism, tested: is the embeddings' frequent-token alignment concentrated in the singular
    directions the filter removes? The mean sentence embedding's component in the removed band
    (``Vh_rᵀ Vh_r m``, the rows of ``Vh`` the filter drops), read through ``W_U``: Spearman of its logits with the
    tokens' log corpus frequency (tokens seen in the corpus), against ``n_random`` random bands of the same number
    of singular directions (the control). p: the share of random bands aligned at least as strongly, counted with
    the observed band ((k + 1) / (n + 1)). Stored."""
    params = _tokenized({"backbone": backbone_name, "prompt": prompt, "filter": f"{kind}/{ratio}",
                         "n_sentences": n_sentences, "n_random": n_random, "seed": seed, "corpus": list(CORPUS_FILES),
                         "sentences": "STS-B test (seeded sample)", "statistic": "removed-band alignment"},
                        tokenization)

    def compute():
        start = time.perf_counter()
        backbone = load_backbone(backbone_name, dtype=STORED_DTYPE)
        config = encode_config(backbone, prompt, tokenization=tokenization)
        states = encode(backbone, sentence_sample(n_sentences, seed), config, progress=False)[config.poolings[0]][0]
        w = unembedding_matrix(backbone).float().numpy()
        vh = unembedding_spectrum(backbone).vh
        counts = token_frequencies(backbone.tokenizer, corpus_texts(), w.shape[0])
        seen = np.flatnonzero(counts > 0)
        log_freq = np.log(counts[seen] + 1.0)
        mean = np.asarray(states, dtype=np.float64).mean(0)  # the average logit is linear in the state
        kept = set(filter_indices(kind, vh.shape[1], kept_dims(vh.shape[1], ratio)).tolist())
        removed = np.array([i for i in range(vh.shape[0]) if i not in kept])

        coefficients = vh @ mean  # the mean embedding in the singular directions' coordinates
        lens = w[seen].astype(np.float64) @ vh.T  # each seen token's logit per unit of each direction

        def alignment(rows: np.ndarray) -> float:  # the band's component of the mean, read through W_U
            mask = np.zeros(len(coefficients))
            mask[rows] = 1.0
            return float(stats.spearmanr(lens @ (coefficients * mask), log_freq)[0])

        observed = alignment(removed)
        rng = np.random.default_rng(seed)
        control = np.array([alignment(rng.choice(vh.shape[0], len(removed), replace=False)) for _ in range(n_random)])
        p = float((int((control >= observed).sum()) + 1) / (n_random + 1))
        rows = pd.DataFrame([{"band": "removed by the filter", "directions": len(removed), "spearman": observed},
                             {"band": "random (mean of the control)", "directions": len(removed),
                              "spearman": float(control.mean())}])
        extra = {"removed_spearman": observed, "random_spearman": control.tolist(), "p_one_sided": p,
                 "removed_directions": int(len(removed)), "tokens_seen": int(len(seen))}
        return rows, {"seconds": time.perf_counter() - start}, extra

    return load_or_compute(EXPERIMENT, params, compute, recompute=recompute)
