"""Text samples the experiments draw: every text a task encodes, a seeded sample of STS-B sentences, and
sentences from the NLI triplets."""

from __future__ import annotations

import random

from repro.core.tasks import TASKS, read_task
from repro.store.paths import data_jsonl


def task_texts(name: str, suite: str) -> list[str]:
    """Every text a task encodes (upper bound for classification: mteb undersamples the train split)."""
    data = read_task(name, suite)
    if TASKS[name].category == "Retrieval":
        corpus = [(t + " " + x).strip() if t else x for t, x in zip(data["corpus"]["title"], data["corpus"]["text"])]
        return data["queries"]["text"] + corpus
    texts: list[str] = []
    for cols in data.values():
        for key in ("sentence1", "sentence2", "text"):
            texts += cols.get(key, [])
        for group in cols.get("sentences", []):
            texts += group
    return texts


def sentence_sample(n: int, seed: int = 0) -> list[str]:
    """A fixed, seeded sample of distinct STS-B test sentences (from the data folder)."""

    data = read_task("STSBenchmark", "full")["test"]
    sentences = sorted(set(data["sentence1"] + data["sentence2"]))
    if not isinstance(n, int) or n < 3:
        raise ValueError(f"n_sentences must be an integer >= 3, got {n!r}")
    return random.Random(seed).sample(sentences, min(n, len(sentences)))


NLI_FILE = "train/nli_triplets/snli_dev_test_triplets.jsonl"


def nli_sentences(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct sentences (seeded sample) from the NLI triplets, to fit the whitening baseline."""
    sentences: set[str] = set()
    for row in data_jsonl(NLI_FILE, "the whitening baseline is fitted on the NLI triplets"):
        sentences.update(row[k] for k in ("anchor", "positive", "negative"))
    pool = sorted(sentences)
    if n > len(pool):
        raise ValueError(f"asked for {n} NLI sentences, the file has {len(pool)}")
    return random.Random(seed).sample(pool, n)
