"""Per-unit results for paired tests inside a task, read from mteb's own prediction files.

A task's main score is a statistic over units: STS pairs, retrieval queries, classification test examples,
pair-classification pairs, clustering documents. Two models scored on the same task (same suite, same caps) are
compared inside the task by resampling those units (:mod:`repro.core.paired_tests`). What each category keeps,
compressed (float16 base64, :func:`repro.store.results.encode_array`), with every stored score:

==================  =======  ======================================================================================
category            unit     stored
==================  =======  ======================================================================================
STS                 pair     ``pair_similarities`` (cosine, mteb's STS prediction file; stored since the start)
Retrieval           query    per-query nDCG@10 (pytrec_eval through mteb's own scoring on mteb's ranked lists;
                             the task's ``ignore_identical_ids`` applied), in sorted query-id order
Classification      example  per-example fraction of mteb's ``n_experiments`` classifiers that were right
PairClassification  pair     every similarity function per pair (the paired test recomputes mteb's max AP;
                             scores stored before: cosine only, and the test says cosine AP)
Clustering          document cluster id per document (the paired test recomputes V-measure per subset)
==================  =======  ======================================================================================

Each unit array is checked against the main score mteb reported where it determines it (the mean nDCG@10, the
mean accuracy): a mismatch raises instead of storing per-unit data that do not explain the score.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
from sklearn.metrics import average_precision_score, v_measure_score

from repro.core.derived import stored_statistic
from repro.core.stats import paired_bootstrap_mean, paired_bootstrap_spearman, paired_bootstrap_statistic
from repro.core.tasks import TASKS, read_task
from repro.store.results import decode_array, encode_array

TOLERANCE = 1e-4


def _digest(items) -> str:
    return hashlib.sha256(json.dumps(list(items)).encode()).hexdigest()[:16]


def _check(name: str, value: float, main_score: float) -> None:
    if not abs(value - main_score) <= TOLERANCE:
        raise RuntimeError(f"{name}: the per-unit data give {value:.6f}, mteb's main score is {main_score:.6f}")


def retrieval_units(task, ranked: dict, qrels: dict, main_score: float | None = None) -> dict:
    """Per-query nDCG@10 of mteb's ranked lists ``{query: {doc: score}}``."""
    if getattr(task, "ignore_identical_ids", False):
        ranked = {q: {d: s for d, s in docs.items() if d != q} for q, docs in ranked.items()}
    from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores  # (here: reading pages skip mteb)

    scores = calculate_retrieval_scores(ranked, qrels, [10]).all_scores
    ids = sorted(qrels)
    values = np.array([scores.get(q, {}).get("ndcg_cut_10", 0.0) for q in ids], dtype=float)
    if main_score is not None and task.metadata.main_score == "ndcg_at_10":
        _check(task.metadata.name, float(values.mean()), main_score)
    return {"unit": "query", "metric": "nDCG@10", "n": len(ids), "ids": _digest(ids),
            "values": encode_array(values)}


def classification_units(task, predictions: list, labels: list, main_score: float | None = None) -> dict:
    """Per-example fraction of correct predictions over mteb's experiments (its mean is the mean accuracy)."""
    predicted = np.asarray(predictions)
    if predicted.ndim != 2 or predicted.shape[1] != len(labels):
        raise RuntimeError(f"{task.metadata.name}: predictions {predicted.shape} do not match {len(labels)} labels")
    values = (predicted == np.asarray(labels)[None]).mean(0)
    if main_score is not None and task.metadata.main_score == "accuracy":
        _check(task.metadata.name, float(values.mean()), main_score)
    return {"unit": "example", "metric": "accuracy", "n": len(labels), "experiments": int(predicted.shape[0]),
            "ids": _digest(labels), "values": encode_array(values)}


# mteb's pair-classification similarity functions (``PairClassificationDistances``), each oriented so that higher
# means more similar (distances negated, as mteb's average precision does); its main score, max AP, is the highest
# average precision among them
PAIR_FUNCTIONS = {"similarity": ("similarity_scores", 1), "cosine": ("cosine_scores", 1),
                  "manhattan": ("manhattan_distances", -1), "euclidean": ("euclidean_distances", -1),
                  "dot": ("dot_scores", 1)}


def pair_classification_units(task, predictions: dict, labels: list) -> dict:
    """Every similarity function's value per pair (the test recomputes mteb's max AP, the main score, with the
    labels); ``values`` is the cosine, as stored before the other functions were kept."""
    cosine = np.asarray(predictions["cosine_scores"], dtype=float)
    if len(cosine) != len(labels):
        raise RuntimeError(f"{task.metadata.name}: {len(cosine)} similarities for {len(labels)} pairs")
    functions = {name: encode_array(sign * np.asarray(predictions[key], dtype=float))
                 for name, (key, sign) in PAIR_FUNCTIONS.items()}
    return {"unit": "pair", "metric": "max AP", "n": len(labels), "ids": _digest(labels),
            "values": encode_array(cosine), "functions": functions}


def _pair_scores(ua: dict, ub: dict) -> tuple[str, list, list]:
    """The pair-classification statistic both stored scores allow: mteb's max AP over its similarity functions
    when both kept them all, else cosine AP (scores stored before that, with the cosine only)."""
    if "functions" in ua and "functions" in ub:
        return "max AP", *[[decode_array(u["functions"][n]).astype(float) for n in PAIR_FUNCTIONS] for u in (ua, ub)]
    return "cosine AP", [decode_array(ua["values"]).astype(float)], [decode_array(ub["values"]).astype(float)]


def clustering_units(task, assignments: list, labels: list[list]) -> dict:
    """Cluster id per document, subset by subset (the test recomputes each subset's V-measure)."""
    if [len(a) for a in assignments] != [len(x) for x in labels]:
        raise RuntimeError(f"{task.metadata.name}: assignments do not match the subsets' sizes")
    return {"unit": "document", "metric": "V-measure", "n": sum(len(a) for a in assignments),
            "subset_sizes": [len(a) for a in assignments], "ids": _digest(labels),
            "values": encode_array(np.concatenate([np.asarray(a, dtype=float) for a in assignments]))}


def task_units(task, prediction: dict, main_score: float | None = None) -> dict | None:
    """The per-unit record of one task from mteb's prediction file content (``{subset: {split: ...}}``), or None
    for STS (its pair similarities are stored on their own)."""
    source = task.repro_source
    value = next(v for k, v in prediction.items() if k != "mteb_model_meta")["test"]
    if source.category == "STS":
        return None
    data = read_task(source.name, task.repro_suite)
    if source.category == "Retrieval":
        return retrieval_units(task, value, data["qrels"], main_score)
    if source.category == "Classification":
        return classification_units(task, value, data["test"]["label"], main_score)
    if source.category == "PairClassification":
        return pair_classification_units(task, value, data["test"]["labels"])
    if source.category == "Clustering":
        return clustering_units(task, value, data["test"]["labels"])
    raise ValueError(f"no per-unit data for category {source.category}")


def lacks_units(record: dict | None, task: str) -> bool:
    """Whether a stored score of an offline task outside STS has no per-unit data (False when nothing is stored)."""
    return record is not None and task in TASKS and TASKS[task].category != "STS" and "units" not in record


def _units(record: dict) -> dict:
    if "units" not in record:
        raise ValueError(f"the stored score of {record['params'].get('task')} has no per-unit data (scored before "
                         "they were stored: recompute it)")
    return record["units"]


def _payload(record: dict):
    """What a paired test reads of a stored score: STS pair similarities, or the per-unit data."""
    if TASKS[record["params"]["task"]].category == "STS":
        return record["pair_similarities"]
    return _units(record)


def paired_test(record_a: dict, record_b: dict, n_resamples: int = 1000, seed: int = 0) -> dict:
    """A paired test of two stored scores of the same task and suite, inside the task: bootstrap over STS pairs
    (Spearman), retrieval queries (mean nDCG@10), classification examples (mean accuracy), pairs (cosine AP) or
    documents (mean V-measure over subsets). ``difference`` is first minus second, x100 like the scores.

    Stored as a derived statistic (:mod:`repro.core.derived`), keyed by the task, suite, resamples, seed and a
    digest of exactly what it reads: both scores' per-unit data and the task data's fingerprint and caps (which
    fix the gold labels), so a page that shows many of these tests computes each once."""
    task, suite = record_a["params"]["task"], record_a["params"]["suite"]
    if (task, suite) != (record_b["params"]["task"], record_b["params"]["suite"]):
        raise ValueError("a paired test needs two scores of the same task and suite")
    inputs = [[r["params"].get("data"), r["params"].get("caps"), _payload(r)] for r in (record_a, record_b)]
    params = {"task": task, "suite": suite, "n_resamples": n_resamples, "seed": seed,
              "inputs": hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]}
    row = stored_statistic("paired test inside a task", params,
                           lambda: [_paired_test(record_a, record_b, n_resamples, seed)]).iloc[0]
    return {key: (value.item() if isinstance(value, np.generic) else value) for key, value in row.items()}


def _plural(unit: str) -> str:
    """``query`` -> ``queries``, ``example`` -> ``examples``: a unit's name in a test's description."""
    return unit[:-1] + "ies" if unit.endswith("y") else unit + "s"


def _paired_test(record_a: dict, record_b: dict, n_resamples: int, seed: int) -> dict:
    task, suite = record_a["params"]["task"], record_a["params"]["suite"]
    category = TASKS[task].category
    data = read_task(task, suite)
    if category == "STS":
        a, b = (decode_array(r["pair_similarities"]) for r in (record_a, record_b))
        result = paired_bootstrap_spearman(data["test"]["score"], a, b, n_resamples, seed)
    else:
        ua, ub = _units(record_a), _units(record_b)
        if ua["ids"] != ub["ids"]:
            raise ValueError(f"{task}: the two scores were computed on different units")
        a, b = (decode_array(u["values"]).astype(float) for u in (ua, ub))
        if category in ("Retrieval", "Classification"):
            result = paired_bootstrap_mean(a, b, n_resamples, seed)
            result["test"] = result["test"].replace("mean difference", f"mean {ua['metric']} difference over "
                                                                       f"{_plural(ua['unit'])}")
        elif category == "PairClassification":
            labels = np.asarray(data["test"]["labels"])
            metric, fa, fb = _pair_scores(ua, ub)
            k = len(fa)

            def ap_difference(y, *scores):
                return (max(average_precision_score(y, x) for x in scores[:k])
                        - max(average_precision_score(y, z) for z in scores[k:]))

            result = paired_bootstrap_statistic(ap_difference, (labels, *fa, *fb), n_resamples, seed, unit="pairs")
            result["test"] = f"{result['test']} ({metric})"
        else:
            sizes = ua["subset_sizes"]
            labels = np.concatenate([np.asarray(x) for x in data["test"]["labels"]])
            subset = np.repeat(np.arange(len(sizes)), sizes)

            def v_difference(y, s, x, z):
                return float(np.mean([v_measure_score(y[s == k], x[s == k]) - v_measure_score(y[s == k], z[s == k])
                                      for k in np.unique(s)]))

            result = paired_bootstrap_statistic(v_difference, (labels, subset, a, b), n_resamples, seed,
                                                unit="documents")
    for key in ("difference", "ci_low", "ci_high"):
        result[key] = 100 * result[key]
    return {"task": task, "category": category, **result}
