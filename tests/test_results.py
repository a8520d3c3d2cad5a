import json

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
    # the machine a timing was measured on: CPU model and count, torch threads, the measured fp32 GEMM rate
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
