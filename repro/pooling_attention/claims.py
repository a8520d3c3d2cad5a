"""Paper 1's claims, tested: the best layer against the last (Figure 2: a sign-flip max-t test over tasks with
the choice of the layer inside it, and a descriptive paired bootstrap over sentence pairs inside each STS task), Tables 2-4's statements about the five designs, and Table
5's about a second, smaller backbone."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from repro.core.derived import inputs_digest, stored_statistic
from repro.core.stats import paired_bootstrap_spearman
from repro.core.tasks import read_task
from repro.pooling_attention.layerwise import pair_similarities, stored_records
from repro.verdicts.comparison import claims_table
from repro.verdicts.rule import ALPHA, FIRST_BETTER, NOT_SIGNIFICANT, SIGNIFICANT, claim_row, margin_for, tasks_test

CATEGORIES = [None, "STS", "Classification", "Clustering", "PairClassification", "Retrieval"]  # None: all tasks
POOLING_PAIRS = [(2, 1), (3, 1), (3, 2), (5, 4)]  # Table 3: trainable / multi-layer pooling
ATTENTION_PAIRS = [(4, 2), (5, 3)]  # Table 4: bidirectional vs causal attention, same pooling

# Tables 2-4's statements: (claim, model, against, category, expected direction)
TABLE_CLAIMS = (
    [("model 5 is the best on STS and retrieval", 5, other, category, "better")
     for other in (1, 2, 3, 4) for category in ("STS", "Retrieval")]
    + [("trainable pooling / bidirectional attention are not significantly better than model 1 on "
        "classification and clustering", m, 1, category, "no gain")
       for m in (2, 3, 4, 5) for category in ("Classification", "Clustering")]
    + [("model 5 significantly beats model 4 in all four categories", 5, 4, category, "better")
       for category in ("STS", "Classification", "Retrieval", "Clustering")]
    # Table 2 (causal attention): trainable pooling helps STS, with no clear gain on retrieval
    + [("Table 2: with causal attention, trainable pooling significantly improves STS", m, 1, "STS", "better")
       for m in (2, 3)]
    # "no clear gain" is parity wording: tested two-sided against the margin (TOST), so a collapse contradicts it
    + [("Table 2: with causal attention, trainable pooling brings no clear gain on retrieval", m, 1, "Retrieval",
        "equal") for m in (2, 3)]
    # Table 3, causal attention: the paper's new pooling against last-layer trainable pooling (model 3 vs 2)
    + [("Table 3: multi-layer trainable pooling beats last-layer trainable pooling under causal attention "
        "(model 3 vs 2)", 3, 2, category, "better") for category in ("STS", "Retrieval")]
    # Table 3: bidirectional attention against causal, same pooling
    + [("Table 3: bidirectional attention consistently improves retrieval", a, b, "Retrieval", "better")
       for a, b in ATTENTION_PAIRS]
    + [("Table 3: bidirectional attention lowers clustering", a, b, "Clustering", "worse") for a, b in ATTENTION_PAIRS]
)

LAYER_SIMILARITY = "Figure 1: adjacent layers are alike, distant layers are not"
# the paper's own sentence beside a statement whose reading (one-sided "not better" or parity) it decides
SENTENCES = {
    "trainable pooling / bidirectional attention are not significantly better than model 1 on classification and "
    "clustering": "'they do not significantly surpass simpler designs like EOS-last token pooling and default causal "
                  "attention in clustering and classification tasks' (abstract): one-sided, not a claim of parity",
    "Table 3: multi-layer trainable pooling beats last-layer trainable pooling under causal attention (model 3 vs 2)":
        "'This method proves to be statistically superior in text similarity and retrieval tasks compared to current "
        "pooling methods' (abstract)",
}

# Table 5's statements about the second, smaller backbone (Tang & Yang's qualitative findings there)
ROBUSTNESS_CLAIMS = (
    [("Table 5: model 5 is good on STS", 5, 1, "STS", "better"),
     ("Table 5: but model 5 is worse on classification", 5, 1, "Classification", "worse")]
    + [("Table 5: complex designs bring no consistent meaningful gain on a small model", m, 1, None, "no gain")
       for m in (2, 3, 4, 5)]
)


def present_claims(claims: Sequence[tuple], models) -> list[tuple]:
    """The statements of ``claims`` whose two models are both in ``models`` (e.g. those with stored runs)."""
    models = set(models)
    return [c for c in claims if c[1] in models and c[2] in models]


# every pair of designs a statement or Tables 3-4 compare, once each (the paired tests inside each task)
COMPARED_PAIRS = list(dict.fromkeys([(claim[1], claim[2]) for claim in TABLE_CLAIMS] + POOLING_PAIRS
                                    + ATTENTION_PAIRS))


def table_claims(wide: pd.DataFrame) -> pd.DataFrame:
    """Every statement of :data:`TABLE_CLAIMS` with its test and verdict, on one backbone's per-task scores."""
    return claims_table(wide, TABLE_CLAIMS)


BEST_LAYER_TEST = ("sign-flip max-t test of the best layer's gain over the last, the maximum taken over every layer "
                   "(Westfall-Young), tasks as units")


def _t(gains: np.ndarray) -> np.ndarray:
    """One-sample t statistic of each column (a layer's gains over tasks); a column of equal gains: 0 if they are
    0, else +-inf."""
    mean, sd = gains.mean(axis=-2), gains.std(axis=-2, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, mean / (sd / np.sqrt(gains.shape[-2])), np.where(mean == 0, 0.0, np.sign(mean) * np.inf))


def comparable(wide: pd.DataFrame, last) -> pd.DataFrame:
    """The part of ``wide`` (tasks x layers) the best-layer test reads: the tasks where the ``last`` layer is
    scored, and the layers scored on every one of them (e.g. layer 0, whose constant state has no STS score, is
    left out)."""
    return wide[wide[last].notna()].dropna(axis=1)


def best_layer_test(wide: pd.DataFrame, last, n_resamples: int = 10_000, seed: int = 0) -> dict:
    """Is some layer better than the ``last`` on average over tasks (rows of ``wide``, layers as columns;
    :func:`comparable`)? The statistic is the largest one-sample t of a layer's gains over the last, taken over
    every layer, so choosing the layer on the tested tasks is inside the test: under the null (each task's gains
    symmetric about 0) a task's gains flip sign together, and the p is the share of ``n_resamples`` seeded flips
    whose largest t reaches the observed one (one-sided; Westfall and Young's max-t). ``layer``: the layer with the
    largest t, and ``difference``: its mean gain (the effect the p is about). Fewer than 5 tasks cannot reach
    p < 0.05: untestable."""
    wide = comparable(wide, last)
    gains = wide.drop(columns=last).sub(wide[last], axis=0)
    n = len(gains)
    if n < 5 or gains.shape[1] == 0:
        return {"layer": None, "difference": np.nan, "tasks": n, "p": np.nan,
                "verdict": f"untestable at n={n} tasks (smallest possible p = {0.5 ** n:.3f})"}
    values = gains.to_numpy()
    observed = _t(values)
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(n_resamples, n, 1))
    null = _t(signs * values).max(axis=1)
    p = float((1 + (null >= observed.max() - 1e-9).sum()) / (1 + n_resamples))
    layer = gains.columns[int(np.argmax(observed))]
    return {"layer": layer, "difference": float(gains[layer].mean()), "tasks": n, "p": p,
            "verdict": SIGNIFICANT + FIRST_BETTER if p < ALPHA else NOT_SIGNIFICANT}


def best_vs_last_layer(scores: pd.DataFrame, n_resamples: int = 10_000) -> pd.DataFrame:
    """Figure 2: per backbone and category (and over all tasks), the best layer's EOS score against the last
    layer's (the best mean, a description), and :func:`best_layer_test`: the layer with the largest t, its gain
    and the test's p (the choice of the layer is inside the test), all on :func:`comparable`'s tasks and layers.
    ``scores``: per-layer rows with ``backbone``, ``category``, ``task``, ``layer``, ``pooling``, ``score`` (x100)."""
    rows = []
    eos = scores[scores.pooling == "last"]
    groups = [((b, cat), part) for (b, cat), part in eos.groupby(["backbone", "category"])]
    groups += [((b, "all tasks"), part) for b, part in eos.groupby("backbone")]  # 19 tasks: a testable n
    for (b, cat), part in groups:
        full = part.pivot_table(index="task", columns="layer", values="score")
        last = full.columns.max()
        wide = comparable(full, last)
        best = wide.mean().idxmax()
        test = best_layer_test(wide, last, n_resamples)
        rows.append({"backbone": b, "category": cat, "tasks": wide.shape[0], "best layer": int(best),
                     "best score": round(wide[best].mean(), 2), "last layer": int(last),
                     "last score": round(wide[last].mean(), 2), "p (max over layers)": round(test["p"], 4),
                     "verdict": test["verdict"],
                     "tested layer (largest t)": None if test["layer"] is None else int(test["layer"]),
                     "its gain": round(test["difference"], 2)})
    return pd.DataFrame(rows).astype({"tested layer (largest t)": "Int64"})  # a layer number, or <NA> (untestable)


def best_vs_last_per_pair(backbones: Sequence[str], suite: str, claims: pd.DataFrame,
                          scores: pd.DataFrame) -> pd.DataFrame:
    """Inside each STS task: the best STS layer (from ``claims``, :func:`best_vs_last_layer`) against the last,
    a paired bootstrap over the task's sentence pairs, from the stored per-pair similarities. Stored once per
    backbone (:func:`repro.core.derived.stored_statistic`, keyed by a digest of what it reads)."""
    frames = []
    sts = set(scores[scores.category == "STS"].task.unique())
    for b in backbones:
        records = stored_records(b, suite)
        best = int(claims[(claims.backbone == b) & (claims.category == "STS")]["best layer"].iloc[0])
        inputs = {}  # task -> (last layer, gold, best layer's similarities, last layer's)
        for task, record in sorted(records.items()):
            if record["params"]["task"] not in sts:
                continue
            last = max(record["params"]["scored_layers"])
            a, z = pair_similarities(record, best, "last"), pair_similarities(record, last, "last")
            if a is not None and z is not None:
                inputs[task] = (last, read_task(task, suite)["test"]["score"], a, z)
        if not inputs:
            continue
        params = {"backbone": b, "suite": suite, "best layer": best,
                  "last layers": {task: last for task, (last, *_) in inputs.items()},
                  "inputs": inputs_digest(*(x for _, *arrays in inputs.values() for x in arrays))}

        def compute(b=b, best=best, inputs=inputs):
            rows = []
            for task, (last, gold, a, z) in inputs.items():
                test = paired_bootstrap_spearman(gold, a, z)
                rows.append({"backbone": b, "task": task, "best layer": best, "last layer": last,
                             "difference x100": round(100 * test["difference"], 2),
                             "95% CI x100": f"[{100 * test['ci_low']:.2f}, {100 * test['ci_high']:.2f}]",
                             "verdict": test["verdict"]})
            return rows

        frames.append(stored_statistic("paired bootstrap of Spearman, best layer vs last", params, compute))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def layer_similarity_claims(matrices: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Figure 1 in a testable form, per backbone (``matrices``: backbone -> the stored rows of
    :func:`repro.pooling_attention.layer_similarity.layer_correlation`): for each anchor layer i (layers with a
    defined CKA), linear CKA x100 of layers i and i+1 against layers i and i + ceil(L/2); the anchors are the units
    (deterministic states: a Wilcoxon over anchors, :func:`repro.verdicts.rule.tasks_test`)."""
    rows = []
    for backbone, frame in matrices.items():
        cka = frame[frame["measure"] == "linear_cka"].pivot_table(index="layer_i", columns="layer_j", values="value")
        layers = [i for i in cka.index if np.isfinite(cka.loc[i, i])]
        gap = int(np.ceil(max(layers) / 2)) if layers else 0
        anchors = [i for i in layers if i + gap in layers and i + 1 in layers]
        near = np.array([cka.loc[i, i + 1] for i in anchors], dtype=float) * 100
        far = np.array([cka.loc[i, i + gap] for i in anchors], dtype=float) * 100
        row = claim_row(LAYER_SIMILARITY, f"adjacent vs {gap} apart", backbone, "better",
                        tasks_test(near, far, margin=margin_for("CKA")), near, far, len(anchors))
        rows.append(row | {"test": "Wilcoxon signed-rank over anchor layers (two-sided)",
                           "units": f"{len(anchors)} anchor layers", "metric": "CKA"})
    return pd.DataFrame(rows)
