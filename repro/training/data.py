"""Training data: triplet files, seeded subsets and splits, the deterministic batch of a step, padding, and the
STS-B dev signal every training run validates on."""

from __future__ import annotations

import random

import numpy as np
import torch
from scipy.stats import spearmanr

from repro.core.tasks import read_tsv, task_folder
from repro.store.paths import data_jsonl

SNLI = "train/nli_triplets/snli_dev_test_triplets.jsonl"
MEDI = "train/medi_nli/medi_nli.jsonl"
MRPC = "train/mrpc_pairs/mrpc_pairs.jsonl"
QA = "train/qa_pairs/qa_pairs.jsonl"
# Declared training mixes (files under the data folder). Pairs (MRPC, QA) have no hard negative: their queries
# score against the batch's other documents only. SciFact's train pairs are never used: their positives include
# 181 of the 283 documents relevant to SciFact's test queries, a reported task.
DATASETS: dict[str, tuple[str, ...]] = {
    "nli": (SNLI,),  # SNLI triplets (the earlier Paper 1 runs)
    "nli-medi": (SNLI, MEDI),  # Paper 3: AutoRegEmbed and its contrastive baselines alike
    "mix": (SNLI, MEDI, MRPC, QA),  # Paper 1: NLI triplets, paraphrase and QA pairs
}


def subset(rows: list, n: int, seed: int) -> list:
    """A seeded subset of ``n`` rows (in their original order); ``n = 0`` keeps them all."""
    if not n:
        return rows
    if n > len(rows):
        raise ValueError(f"train_examples={n} exceeds the {len(rows)} training examples")
    keep = np.random.default_rng([seed, 7]).permutation(len(rows))[:n]
    return [rows[i] for i in sorted(keep)]


def read_triplets(name: str = "nli") -> list[dict]:
    """The rows of a declared training set, in file order: ``query``, ``positive`` and ``negative`` (None for
    pairs) and the ``source`` file."""
    if name not in DATASETS:
        raise ValueError(f"unknown training data '{name}'; valid: {', '.join(DATASETS)}")
    rows = []
    for relative in DATASETS[name]:
        rows += [{"query": r["anchor"], "positive": r["positive"], "negative": r.get("negative"),
                  "source": relative.split("/")[1]} for r in data_jsonl(relative, f"training data '{name}'")]
    return rows


def split_triplets(data: str, validation_triplets: int, seed: int) -> tuple[list[dict], list[dict]]:
    """Training and held-out triplets of the training mix ``data`` (:data:`DATASETS`), about ``validation_triplets``
    held out, split by anchor (an anchor's triplets never straddle the split) in the order of ``seed``."""
    rows = read_triplets(data)
    anchors = sorted({r["query"] for r in rows})
    random.Random(seed).shuffle(anchors)
    held, count = set(), 0
    for anchor in anchors:
        if count >= validation_triplets:
            break
        held.add(anchor)
        count += sum(r["query"] == anchor for r in rows)
    return [r for r in rows if r["query"] not in held], [r for r in rows if r["query"] in held]


def batch_indices(n: int, batch_size: int, step: int, seed: int) -> list[int]:
    """The global batch of a step: a deterministic function of (seed, step) (epochs reshuffle)."""
    per_epoch = n // batch_size
    if per_epoch == 0:
        raise ValueError(f"batch size {batch_size} exceeds the {n} training examples")
    epoch, position = divmod(step, per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(n)
    return order[position * batch_size:(position + 1) * batch_size].tolist()


def pad_right(items, pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-id lists -> right-padded ``ids`` and ``attention_mask`` tensors."""
    width = max(len(i) for i in items)
    ids = torch.full((len(items), width), pad, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for row, item in enumerate(items):
        ids[row, :len(item)] = torch.tensor(item)
        mask[row, :len(item)] = 1
    return ids, mask


def validation_sts(embed, pairs: int, seed: int = 0) -> float:
    """Spearman x100 of cosine similarity on a seeded sample of STS-B dev pairs; ``embed(texts)`` gives
    L2-normalised embeddings."""

    rows = read_tsv(task_folder("STSBenchmark") / "dev.tsv")
    rows = random.Random(seed).sample(rows, min(pairs, len(rows)))
    a = embed([r["sentence1"] for r in rows])
    b = embed([r["sentence2"] for r in rows])
    return float(100 * spearmanr((a * b).sum(1), [float(r["score"]) for r in rows])[0])
