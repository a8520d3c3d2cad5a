import json
import os

import pandas as pd
import pytest

from repro.store.results import load_or_compute, load_result, result_path, save_result


def test_save_and_load_round_trip_with_provenance():
    rows = pd.DataFrame({"task": ["STS12"], "main_score": [0.5]})
    path = save_result("unit", {"backbone": "x", "n": 3}, rows, timings={"s": 1.0})
    record = json.loads(path.read_text())
    assert record["rows"] == [{"task": "STS12", "main_score": 0.5}]
    prov = record["provenance"]
    assert prov["packages"]["torch"] and prov["packages"]["mteb"]
    assert "commit" in prov["git"] and prov["date"]
    # the machine a timing was measured on: CPU model and count, torch threads, the measured fp32 GEMM rate (in a
    # process that loaded torch, as these tests do)
    assert prov["machine"]["cpu_model"] and prov["machine"]["cpus"] >= 1 and prov["machine"]["torch_threads"] >= 1
    assert prov["machine"]["gemm_gflops_fp32"] > 0
    assert load_result("unit", {"backbone": "x", "n": 3})["timings"] == {"s": 1.0}
    assert load_result("unit", {"backbone": "x", "n": 4}) is None


def test_load_or_compute_computes_once():
    calls = []

    def compute():
        calls.append(1)
        return pd.DataFrame({"v": [1.0]}), {}, {}

    load_or_compute("unit", {"a": 1}, compute)
    load_or_compute("unit", {"a": 1}, compute)
    assert calls == [1]
    load_or_compute("unit", {"a": 1}, compute, recompute=True)
    assert calls == [1, 1]


def test_nan_scores_are_kept_as_missing_not_dropped():
    rows = pd.DataFrame({"layer": [0, 1], "main_score": [float("nan"), 0.3]})
    save_result("unit", {"nan": True}, rows)
    got = load_result("unit", {"nan": True})["rows"]
    assert len(got) == 2 and got[0]["main_score"] is None


def test_bad_experiment_names_are_refused():
    with pytest.raises(ValueError):
        result_path("../escape", {})


def test_the_cost_page_sums_stored_timings_and_counts_untimed_results_as_unknown(tmp_path, monkeypatch):
    from repro.book import cost

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "results"))
    rows = pd.DataFrame({"task": ["STS12"], "main_score": [0.5]})
    save_result("trained_runs", {"run": 1}, rows, timings={"train_seconds": 3600.0})
    save_result("layerwise", {"task": "a"}, rows, timings={"task_seconds": 1800.0, "tokens_upper_bound": 9e9})
    save_result("p1_layer_correlation", {"b": 1}, rows, timings={"encode_seconds": 10.0, "total_seconds": 720.0})
    save_result("autoreg_untrained", {"task": "a"}, rows)
    costs = cost.stored_costs()
    # total_seconds covers its parts; token counts are not seconds; no timing is unknown (NaN), never 0
    assert costs.set_index("experiment")["seconds"].fillna(-1).to_dict() == {
        "autoreg_untrained": -1, "layerwise": 1800.0, "p1_layer_correlation": 720.0, "trained_runs": 3600.0}
    table = cost.per_experiment(costs)
    assert table.loc["autoreg_untrained", "timed"] == 0 and pd.isna(table.loc["autoreg_untrained", "hours (wall clock)"])
    assert table.loc["trained_runs", "hours (wall clock)"] == 1.0
    pages = cost.per_page(costs)
    assert pages.loc["p1_layerwise_mteb", "hours (wall clock)"] == 0.5
    assert pages.loc["p3_tables", "untimed results"] == 1
    assert cost.per_run(costs)["training hours"].tolist() == [1.0]
    assert costs["cpu_model"].iloc[0] != "not recorded"  # provenance records it now


def test_a_derived_statistic_is_computed_once_per_exact_inputs_and_read_back():
    import numpy as np

    from repro.core.derived import inputs_digest, stored_statistic

    calls = []

    def compute():
        calls.append(1)
        return [{"task": "STSBenchmark", "difference": 0.25, "verdict": "first better"}]

    a, b = np.arange(5.0), np.arange(5.0)[::-1]
    params = {"backbone": "x", "inputs": inputs_digest(a, b)}
    first = stored_statistic("a test", params, compute)
    again = stored_statistic("a test", params, compute)
    assert calls == [1] and first.equals(again) and first.loc[0, "difference"] == 0.25
    assert list(again.columns) == ["task", "difference", "verdict"]  # as computed, not as the store sorts keys
    changed = b.copy()
    changed[0] += 1e-9  # any change to what it reads is another key
    assert inputs_digest(a, changed) != params["inputs"] != inputs_digest(b, a)
    stored_statistic("a test", params | {"inputs": inputs_digest(a, changed)}, compute)
    assert calls == [1, 1]
    stored_statistic("a test", params, compute, recompute=True)
    assert len(calls) == 3
    with pytest.raises(ValueError, match="'statistic' is the key"):
        stored_statistic("a test", {"statistic": "other"}, compute)


def test_file_digests_are_remembered_by_stat_and_a_rewritten_file_is_read_again(tmp_path, monkeypatch):
    from repro.store import fingerprint

    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("x\t1\n"), b.write_text("y\t2\n")
    reads = []
    real = fingerprint._sha256
    monkeypatch.setattr(fingerprint, "_sha256", lambda paths, names: reads.append(1) or real(paths, names))
    first = fingerprint.sha256_files([a, b], with_names=True)
    assert fingerprint.sha256_files([a, b], with_names=True) == first and len(reads) == 1  # remembered
    assert fingerprint.sha256_files([b, a], with_names=True) != first  # order matters
    assert fingerprint.sha256_files([a, b]) != first  # so do the names
    stat = a.stat()
    a.write_text("x\t9\n")  # same size, new content
    os.utime(a, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert fingerprint.sha256_files([a, b], with_names=True) == real([a, b], True) != first
    with pytest.raises(FileNotFoundError):
        fingerprint.sha256_files([tmp_path / "missing.tsv"])
