"""Per-unit data for paired tests inside a task: stored with every score, consistent with mteb's main score, and
the in-task paired test of two stored scores."""

import copy
import hashlib

import numpy as np
import pytest

from repro.core.embedder import Embedder
from repro.core.paired import paired_test
from repro.core.scoring import evaluate_per_task
from repro.core.suites import describe_suite
from repro.core.tasks import data_fingerprint
from repro.store.results import decode_array, encode_array, load_result

TASKS = ["SciFact", "ArguAna", "Banking77Classification", "TwitterURLCorpus", "TwentyNewsgroupsClustering", "STS17"]


class HashEmbedder(Embedder):
    """Deterministic pseudo-random embeddings (a seed per text): no model needed."""

    def __init__(self, salt: str, dim: int = 16):
        self.salt, self._dim = salt, dim

    @property
    def dim(self):
        return self._dim

    @property
    def identity(self):
        return f"hash-{self.salt}"

    def embed(self, texts, role, instruction):
        seeds = [int(hashlib.md5((self.salt + t).encode()).hexdigest()[:8], 16) for t in texts]
        return np.stack([np.random.default_rng(s).standard_normal(self._dim) for s in seeds]).astype(np.float32)


def _scores(salt: str):
    embedder = HashEmbedder(salt)
    frame = evaluate_per_task("paired_test", {"model": salt}, "smoke", TASKS, lambda: (embedder, salt),
                              progress=False)
    return frame, {t: load_result("paired_test", {"model": salt, "suite": "smoke", "caps": describe_suite("smoke"),
                                                  "task": t, "data": data_fingerprint(t)}) for t in TASKS}


def test_every_category_stores_units_that_explain_its_score_and_paired_tests_run():
    frame, first = _scores("a")
    _, second = _scores("b")
    for task in ("SciFact", "ArguAna"):  # mean per-query nDCG@10 == mteb's main score
        units = first[task]["units"]
        assert units["unit"] == "query"
        main = frame.set_index("task").loc[task, "main_score"]
        assert abs(decode_array(units["values"]).astype(float).mean() - main) < 2e-3  # float16 storage
    cls = first["Banking77Classification"]["units"]
    assert cls["unit"] == "example" and cls["experiments"] >= 1
    assert first["TwitterURLCorpus"]["units"]["unit"] == "pair"
    assert first["TwentyNewsgroupsClustering"]["units"]["unit"] == "document"
    assert "pair_similarities" in first["STS17"] and "units" not in first["STS17"]
    for task in TASKS:
        same = paired_test(first[task], first[task], n_resamples=50)
        assert same["difference"] == 0 and same["verdict"] == "not significant" or "degenerate" in same["verdict"]
        other = paired_test(first[task], second[task], n_resamples=50)
        assert other["task"] == task and np.isfinite(other["difference"])
        assert other["ci_low"] <= other["difference"] <= other["ci_high"] or "degenerate" in other["verdict"]
    with pytest.raises(ValueError, match="same task"):
        paired_test(first["SciFact"], first["ArguAna"])


def test_pair_classification_tests_mtebs_main_score_and_names_cosine_ap_for_scores_stored_without_it():
    """The in-task test of pair classification recomputes max AP, the main score the across-task tests read;
    a score stored with the cosine only is tested on cosine AP, and the test says so."""
    frame_a, first = _scores("a")
    frame_b, second = _scores("b")
    task = "TwitterURLCorpus"
    main = {name: frame.set_index("task").loc[task] for name, frame in (("a", frame_a), ("b", frame_b))}
    test = paired_test(first[task], second[task], n_resamples=50)
    assert "(max AP)" in test["test"]
    across = 100 * (main["a"]["main_score"] - main["b"]["main_score"])
    assert test["difference"] == pytest.approx(across, abs=0.3)  # float16 storage of the similarities
    old = copy.deepcopy(second[task])
    del old["units"]["functions"]  # as stored before every similarity function was kept
    cosine = paired_test(first[task], old, n_resamples=50)
    assert "(cosine AP)" in cosine["test"]
    assert cosine["difference"] == pytest.approx(100 * (main["a"]["cosine_ap"] - main["b"]["cosine_ap"]), abs=0.3)


def test_a_paired_test_is_stored_and_keyed_by_what_it_reads(monkeypatch):
    from repro.core import paired

    _, first = _scores("a")
    _, second = _scores("b")
    task = "SciFact"
    computed = paired_test(first[task], second[task], n_resamples=50)

    def no_recompute(*args):
        raise AssertionError("recomputed")

    monkeypatch.setattr(paired, "_paired_test", no_recompute)
    assert paired_test(first[task], second[task], n_resamples=50) == computed  # read back, same values and types
    with pytest.raises(AssertionError, match="recomputed"):  # another resample count is another statistic
        paired_test(first[task], second[task], n_resamples=60)
    changed = copy.deepcopy(second[task])
    values = decode_array(changed["units"]["values"]).copy()
    values[0] = 1 - values[0]
    changed["units"]["values"] = encode_array(values)
    with pytest.raises(AssertionError, match="recomputed"):  # other per-query scores: another key
        paired_test(first[task], changed, n_resamples=50)


def test_complete_units_recomputes_only_scores_stored_without_them():
    import json

    from repro.store.results import result_path

    tasks = ["SciFact", "STS17"]
    embedder, calls = HashEmbedder("u"), []

    def make():
        calls.append(1)
        return embedder, "u"

    def run(**kw):
        return evaluate_per_task("units_test", {"model": "u"}, "smoke", tasks, make, progress=False, **kw)

    first = run()
    params = {"model": "u", "suite": "smoke", "caps": describe_suite("smoke"), "task": "SciFact",
              "data": data_fingerprint("SciFact")}
    path = result_path("units_test", params)
    record = json.loads(path.read_text())
    del record["units"]  # as stored before per-unit data were kept
    path.write_text(json.dumps(record))
    calls.clear()
    run()  # a page-style call leaves it alone
    assert calls == [] and "units" not in load_result("units_test", params)
    again = run(complete_units=True)  # only the score without units is recomputed, from the same weights
    assert calls == [1] and "units" in load_result("units_test", params)
    assert again.set_index("task")["main_score"].equals(first.set_index("task")["main_score"])
    calls.clear()
    run(complete_units=True)  # nothing left to complete
    assert calls == []


def test_in_task_tests_name_a_score_without_units_untestable():
    from repro.verdicts.seeds import in_task_tests

    _, first = _scores("a")
    _, second = _scores("b")
    old = copy.deepcopy(second["SciFact"])
    del old["units"]
    records = {("m", 0, "SciFact"): first["SciFact"], ("n", 0, "SciFact"): old,
               ("m", 0, "STS17"): first["STS17"], ("n", 0, "STS17"): second["STS17"]}
    table = in_task_tests(records, "m", "n", n_resamples=50).set_index("task")
    assert table.loc["SciFact", "verdict"] == "untestable (no per-unit data stored)"
    assert np.isnan(table.loc["SciFact", "difference"]) and np.isfinite(table.loc["STS17", "difference"])


def test_budget_comparison_counts_every_task_once_at_each_budget_both_curves_share():
    from repro.training.budget_curves import budget_comparison, budget_verdict, flat_curve

    _, a = _scores("a")
    _, b = _scores("b")

    def curve(records, label, steps):  # the same stored scores at every step (16 examples a step)
        return flat_curve(records, {s: 16 * s for s in steps}, label)

    table = budget_comparison(curve(a, 1, [30, 60, 120]), curve(b, 5, [60, 120, 240]), n_resamples=50)
    assert list(table["budget step"]) == [60, 120] and list(table["examples"]) == [960, 1920]
    inside = ["in-task: 1 better", "in-task: 5 better", "in-task: n.s."]
    assert (table[inside].sum(axis=1) == len(TASKS)).all() and (table["tasks"] == len(TASKS)).all()
    same = budget_comparison(curve(a, 1, [30]), curve(a, 5, [30]), n_resamples=50)
    assert same["in-task: n.s."].iloc[0] == len(TASKS) and same["difference"].iloc[0] == 0
    assert "never significant" in budget_verdict(same)
