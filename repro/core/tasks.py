"""Offline MTEB tasks read from the shared data folder, and task suites.

Each task is the real mteb 2 task class (its metadata, main score and evaluator come from the mteb
package, which needs no download) with ``load_data`` replaced by a reader of the plain files in
``<data>/eval/<TaskName>/``. Online (``offline=False``) the same names resolve to the real MTEB
tasks, downloaded by mteb.

A suite (:mod:`repro.core.suites`) caps the size of each task so that it fits this machine; the caps and the
sampling seed are part of every result.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from repro.core.suites import LONG_TEXT_TEST_CAP, ONLINE_SUITES, Caps, suite_caps
from repro.store.fingerprint import sha256_files
from repro.store.paths import data_dir

CATEGORIES = ("STS", "Classification", "Clustering", "PairClassification", "Retrieval")


@dataclass(frozen=True)
class TaskSource:
    name: str  # MTEB task name (also the folder name)
    category: str
    files: dict  # split -> file name (retrieval: the corpus/queries/qrels names)
    hf_subset: str = "default"
    matches_mteb: str = "exact"
    mteb_name: str | None = None  # when the offline task stands for a differently named MTEB task


def _sts(name, file="test.tsv", subset="default", note="exact"):
    return TaskSource(name, "STS", {"test": file}, subset, note)


def _cls(name, prefix="", train="train.tsv", test="test.tsv", subset="default", note="exact"):
    return TaskSource(name, "Classification", {"train": prefix + train, "test": prefix + test}, subset, note)


TASKS: dict[str, TaskSource] = {
    t.name: t
    for t in (
        _sts("STS12", note="exact (SentEval release: lower-cased, tokenized, as MTEB)"),
        _sts("STS13", note="exact (SentEval release: lower-cased, tokenized, as MTEB)"),
        _sts("STS14", note="exact (SentEval release: lower-cased, tokenized, as MTEB)"),
        _sts("STS15", note="exact (SentEval release: lower-cased, tokenized, as MTEB)"),
        _sts("STS16", note="exact (SentEval release: lower-cased, tokenized, as MTEB)"),
        _sts("STS17", subset="en-en", note="exact (en-en subset only)"),
        _sts("STSBenchmark", note="exact (13 whitespace characters differ)"),
        _sts("SICK-R"),
        _sts("BIOSSES"),
        _cls("Banking77Classification"),
        _cls("EmotionClassification"),
        _cls("AmazonCounterfactualClassification", prefix="en_", subset="en", note="exact (en subset only)"),
        _cls("TweetSentimentExtractionClassification", note="test exact; train lacks one empty row"),
        _cls("ImdbClassification", train="train.tsv.gz", test="test.tsv.gz"),
        TaskSource("TwentyNewsgroupsClustering", "Clustering", {"test": "test_subjects.tsv"},
                   matches_mteb="approximate: the standard by-date test split cut into seeded random "
                   "subsets, not MTEB's own 10 subsets"),
        TaskSource("TwitterURLCorpus", "PairClassification", {"test": "mteb_like_test.tsv"},
                   matches_mteb="counts and labels exact"),
        TaskSource("SciFact", "Retrieval", {"corpus": "corpus.jsonl", "queries": "queries_test.jsonl",
                                            "qrels": "qrels_test.tsv"}),
        TaskSource("ArguAna", "Retrieval", {"corpus": "corpus.jsonl", "queries": "queries_test.jsonl",
                                            "qrels": "qrels_test.tsv"},
                   matches_mteb="queries and qrels exact; corpus approximate (108 more docs than MTEB, "
                   "5 relevant docs missing, so 5 queries are unanswerable)"),
        TaskSource("NFCorpusPreprocessed", "Retrieval",
                   {"corpus": "corpus_preprocessed_test_dev.jsonl", "queries": "queries_test.jsonl",
                    "qrels": "qrels_test.tsv"},
                   matches_mteb="NOT comparable with MTEB's NFCorpus: documents are the preprocessed "
                   "release (lower-cased, stop words removed), 3395 of 3633 docs",
                   mteb_name="NFCorpus"),
    )
}

STS_TASKS = [n for n, t in TASKS.items() if t.category == "STS"]
# the SentEval seven STS sets many papers average (GenEOL, PromptEOL, AutoRegEmbed's 7-set comparison)
STS7_TASKS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICK-R"]


def _unknown(kind: str, name: str, valid) -> ValueError:
    return ValueError(f"unknown {kind} '{name}'; valid: {', '.join(valid)}")


def check_task_names(names, suite: str | None = None) -> list[str]:
    """The task names as a list (all tasks when ``names`` is empty); an unknown name is a clear error. For an
    online suite (``mteb``) any task mteb knows is valid (checked from mteb's metadata: nothing is downloaded)."""
    names = list(names or TASKS)
    for name in names:
        if name not in TASKS and not (suite in ONLINE_SUITES and _known_to_mteb(name)):
            if suite in ONLINE_SUITES:
                raise ValueError(f"unknown MTEB task '{name}' (mteb {_mteb().__version__})")
            raise _unknown("task", name, TASKS)
    return names


def _mteb():
    """mteb, imported on first use: pages that only read stored results never import it (~3 s)."""
    import mteb

    return mteb


def _known_to_mteb(name: str) -> bool:
    try:
        return _mteb().get_task(name).metadata.name == name
    except KeyError:
        return False


# ---------------------------------------------------------------- file readers


def read_tsv(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        rows = []
        for line in fh:
            line = line.rstrip("\n")
            if not line:
                continue
            values = line.split("\t")
            rows.append(dict(zip(header, values)))
    return rows


def _read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _sample(rows: list, cap: int | None, seed: int, salt: str) -> list:
    """A seeded sample of at most ``cap`` rows, in their original order."""
    if cap is None or len(rows) <= cap:
        return rows
    rng = random.Random(f"{seed}:{salt}")
    keep = sorted(rng.sample(range(len(rows)), cap))
    return [rows[i] for i in keep]


def task_folder(name: str) -> Path:
    folder = data_dir() / "eval" / name
    if not folder.is_dir():
        raise FileNotFoundError(f"task folder {folder} is missing from the data folder")
    return folder


def read_sts(source: TaskSource, caps: Caps) -> dict:
    rows = read_tsv(task_folder(source.name) / source.files["test"])
    rows = _sample(rows, caps.sts_pairs, caps.seed, source.name)
    return {"test": {"sentence1": [r["sentence1"] for r in rows], "sentence2": [r["sentence2"] for r in rows],
                     "score": [float(r["score"]) for r in rows]}}


def read_classification(source: TaskSource, caps: Caps, suite: str) -> dict:
    folder = task_folder(source.name)
    splits = {}
    test_cap = caps.cls_test
    if source.name == "ImdbClassification" and suite in LONG_TEXT_TEST_CAP:
        test_cap = LONG_TEXT_TEST_CAP[suite]
    all_labels = set()
    for split, cap in (("train", caps.cls_train), ("test", test_cap)):
        rows = read_tsv(folder / source.files[split])
        all_labels.update(r["label"] for r in rows)
        splits[split] = _sample(rows, cap, caps.seed, f"{source.name}:{split}")
    codes = {label: i for i, label in enumerate(sorted(all_labels))}
    return {split: {"text": [r["text"] for r in rows], "label": [codes[r["label"]] for r in rows]}
            for split, rows in splits.items()}


def read_clustering(source: TaskSource, caps: Caps) -> dict:
    rows = read_tsv(task_folder(source.name) / source.files["test"])
    rows = _sample(rows, caps.clustering_docs, caps.seed, source.name)
    order = list(range(len(rows)))
    random.Random(f"{caps.seed}:{source.name}:folds").shuffle(order)
    k = caps.clustering_subsets
    folds = [sorted(order[i::k]) for i in range(k)]
    return {"test": {"sentences": [[rows[i]["text"] for i in f] for f in folds],
                     "labels": [[rows[i]["label"] for i in f] for f in folds]}}


def read_pair_classification(source: TaskSource, caps: Caps) -> dict:
    rows = read_tsv(task_folder(source.name) / source.files["test"])
    rows = _sample(rows, caps.pairs, caps.seed, source.name)
    return {"test": {"sentence1": [r["sentence1"] for r in rows], "sentence2": [r["sentence2"] for r in rows],
                     "labels": [int(r["label"]) for r in rows]}}


def read_retrieval(source: TaskSource, caps: Caps) -> dict:
    """BEIR files -> corpus/queries/qrels, capped: sampled queries, their relevant documents (up to the
    corpus cap) and seeded random distractors filling the corpus to the cap."""
    folder = task_folder(source.name)
    corpus = _read_jsonl(folder / source.files["corpus"])
    queries = _read_jsonl(folder / source.files["queries"])
    qrels: dict[str, dict[str, int]] = {}
    for row in read_tsv(folder / source.files["qrels"]):
        qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(float(row["score"]))
    doc_ids = {d["_id"] for d in corpus}
    queries = [q for q in queries if q["_id"] in qrels]
    queries = _sample(queries, caps.queries, caps.seed, f"{source.name}:queries")
    if caps.corpus is not None and len(corpus) > caps.corpus:
        rng = random.Random(f"{caps.seed}:{source.name}:corpus")
        relevant = sorted({d for q in queries for d, s in qrels[q["_id"]].items() if s > 0 and d in doc_ids})
        if len(relevant) > caps.corpus:
            relevant = sorted(rng.sample(relevant, caps.corpus))
        keep = set(relevant)
        others = sorted(doc_ids - keep)
        keep.update(rng.sample(others, min(len(others), caps.corpus - len(keep))))
        corpus = [d for d in corpus if d["_id"] in keep]
        # queries whose relevant documents were all cut can never be answered: drop them
        queries = [q for q in queries if any(d in keep and s > 0 for d, s in qrels[q["_id"]].items())]
    kept_docs = {d["_id"] for d in corpus}
    kept_qrels = {q["_id"]: {d: s for d, s in qrels[q["_id"]].items() if d in kept_docs} for q in queries}
    return {
        "corpus": {"id": [d["_id"] for d in corpus], "title": [d.get("title", "") for d in corpus],
                   "text": [d.get("text", "") for d in corpus]},
        "queries": {"id": [q["_id"] for q in queries], "text": [q["text"] for q in queries]},
        "qrels": kept_qrels,
    }


def read_task(name: str, suite: str = "standard") -> dict:
    """The plain data of one task under one suite's caps (columns as lists)."""
    if name not in TASKS:
        raise _unknown("task", name, TASKS)
    source, caps = TASKS[name], suite_caps(suite)
    reader: Callable = {
        "STS": read_sts,
        "Classification": lambda s, c: read_classification(s, c, suite),
        "Clustering": read_clustering,
        "PairClassification": read_pair_classification,
        "Retrieval": read_retrieval,
    }[source.category]
    return reader(source, caps)


def data_fingerprint(name: str) -> str:
    """sha256 over the task's files (names, sizes and contents); a task outside the offline data (the ``mteb``
    suite) is identified by its MTEB dataset revision."""
    if name not in TASKS:
        return "mteb-" + str(_mteb().get_task(name).metadata.dataset.get("revision"))
    folder = task_folder(name)
    return sha256_files([folder / f for f in sorted(TASKS[name].files.values())], with_names=True)[:16]


# ---------------------------------------------------------------- mteb task objects


def _to_mteb_dataset(source: TaskSource, data: dict):
    from datasets import Dataset
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData

    if source.category == "Retrieval":
        split = RetrievalSplitData(corpus=Dataset.from_dict(data["corpus"]), queries=Dataset.from_dict(data["queries"]),
                                   relevant_docs=data["qrels"], top_ranked=None)
        return {source.hf_subset: {"test": split}}
    return {source.hf_subset: {split: Dataset.from_dict(cols) for split, cols in data.items()}}


class _ListLabels:
    """A view of a datasets.Dataset whose label column reads as a plain list.

    mteb's ``_undersample_data`` indexes the label column item by item; on datasets 5 each access of a
    ``Column`` costs ~100 us, i.e. tens of seconds per classification evaluation on a 27k train split.
    Handing mteb's own (unchanged) algorithm this view makes the same selection, fast."""

    def __init__(self, dataset, column: str):
        self.dataset, self.column, self.labels = dataset, column, list(dataset[column][:])  # one slice, not row reads

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, key):
        return self.labels if key == self.column else self.dataset[key]

    def select(self, indices):
        return self.dataset.select(indices)


def _undersample_with_list_labels(self, dataset, experiment_num, idxs=None):
    base = super(type(self), self)._undersample_data
    return base(_ListLabels(dataset, self.label_column_name), experiment_num, idxs)


def _calculate_scores_on_arrays(self, y_test, y_pred):
    """mteb hands scikit-learn's metrics the label ``Column`` of a datasets ``Dataset``; each metric then
    converts it row by row (~1 M row reads per evaluation, 90% of a classification evaluation's time).
    Slicing it once gives the same labels as one array; the metrics are mteb's, unchanged."""
    from datasets.arrow_dataset import Column
    if isinstance(y_test, Column):
        y_test = np.asarray(y_test[:])
    return super(type(self), self)._calculate_scores(y_test, y_pred)


def offline_task(name: str, suite: str = "standard"):
    """The mteb 2 task object for ``name``, reading its data from the data folder under a suite."""
    if name not in TASKS:
        raise _unknown("task", name, TASKS)
    suite_caps(suite)
    source = TASKS[name]
    base = type(_mteb().get_task(source.mteb_name or name))

    def load_data(self, num_proc=None, **kwargs):
        if self.data_loaded:
            return
        self.dataset = _to_mteb_dataset(source, read_task(name, suite))
        self.data_loaded = True

    attrs = {"load_data": load_data, "repro_source": source, "repro_suite": suite}
    if source.category == "Clustering":
        attrs["max_fraction_of_documents_to_embed"] = None
    if source.category == "Classification":
        attrs["_undersample_data"] = _undersample_with_list_labels
        attrs["_calculate_scores"] = _calculate_scores_on_arrays
    task = type(f"Offline{base.__name__}", (base,), attrs)()
    task.filter_eval_splits(["test"])
    task.hf_subsets = [source.hf_subset]
    return task


def online_task(name: str):
    """The real MTEB task (downloads its data: needs a network)."""
    source = TASKS.get(name)
    return _mteb().get_task(source.mteb_name if source and source.mteb_name else name)


def suite_task(name: str, suite: str):
    """The mteb task object of ``name`` in ``suite``: the offline task at the suite's caps, or for an online suite
    (``mteb``) the real MTEB task."""
    return online_task(name) if suite in ONLINE_SUITES else offline_task(name, suite)


def suite_tasks(suite: str = "standard", names: list[str] | None = None, offline: bool = True):
    """The task objects of a suite (all offline tasks unless ``names`` narrows them)."""
    suite_caps(suite)
    names = list(TASKS) if names is None else names
    for n in names:
        if offline and n not in TASKS:
            raise _unknown("task", n, TASKS)
    return [offline_task(n, suite) if offline else online_task(n) for n in names]
