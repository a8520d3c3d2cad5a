import json
import os
from pathlib import Path

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
    assert cost.per_experiment(costs, {"layerwise": ["p1_layerwise_mteb"]}).loc["layerwise", "pages"] == \
        "p1_layerwise_mteb"
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


def test_the_read_log_names_every_result_read_and_only_those_kept(tmp_path, monkeypatch):
    from repro.store.results import READ_LOG_ENV, all_results, load_result, save_result

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "results"))
    rows = pd.DataFrame({"task": ["STS12"], "main_score": [0.5]})
    paths = [save_result("layerwise", {"task": t, "suite": s}, rows) for t, s in (("a", "small"), ("b", "full"))]
    log = tmp_path / "reads.txt"
    assert load_result("layerwise", {"task": "a", "suite": "small"}) is not None  # not logged: no log set
    monkeypatch.setenv(READ_LOG_ENV, str(log))
    load_result("layerwise", {"task": "a", "suite": "small"})
    assert load_result("layerwise", {"task": "z", "suite": "small"}) is None  # not stored: nothing read
    assert [r["params"]["task"] for r in all_results("layerwise", where=lambda p: p["suite"] == "full")] == ["b"]
    assert log.read_text().splitlines() == [f"layerwise/{paths[0].stem}", f"layerwise/{paths[1].stem}"]


def test_the_standard_build_records_what_a_page_read_and_the_rerun_tables_cost_it(tmp_path, monkeypatch):
    from repro.book import build, page_costs
    from repro.store.results import save_result

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setattr(build, "BOOK_DIR", tmp_path / "book")
    monkeypatch.setattr(page_costs, "COSTS_FILE", tmp_path / "book" / "page_costs.json")
    rows = pd.DataFrame({"task": ["STS12"], "main_score": [0.5]})
    run = save_result("trained_runs", {"train": {"backbone": "x"}}, rows, timings={"train_seconds": 7200.0})
    score = save_result("trained_scores", {"task": "STS12"}, rows)  # untimed
    page_costs.record_page("p1_train", 12.34, [f"trained_runs/{run.stem}", f"trained_scores/{score.stem}",
                                               f"trained_runs/{run.stem}"])
    table = page_costs.page_costs()
    row = table.loc["p1_train"]
    assert (row["from the cache (s)"], row["results read"], row["from scratch (h)"], row["untimed results"],
            row["training runs"]) == (12.3, 2, 2.0, 1, 1)
    assert pd.isna(table.loc["intro", "from the cache (s)"])  # not recorded yet: no number
    assert page_costs.experiment_pages() == {"trained_runs": ["p1_train"], "trained_scores": ["p1_train"]}
    from repro.book.parameter_table import parameter_table

    params = parameter_table()
    assert params.loc["tasks", "type"] == "list of str or None" and "smollm2-135m" in params.loc["backbones", "values"]
    assert set(params.index) == {p for profiles in build.NOTEBOOKS.values() for p in profiles["standard"]}
    # a real page's standard build records its reads: p2_spectrum at its smoke scale, from the committed smoke store
    import shutil

    from repro.pages import parameters as pages

    store = tmp_path / "smoke"
    shutil.copytree(Path(__file__).parent / "data" / "smoke_results", store)
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(store))
    monkeypatch.setattr(build, "page_parameters", lambda name, profile, overrides=None:
                        pages.page_parameters(name, "smoke", overrides))
    build.execute("p2_spectrum", "standard", output_dir=build.BOOK_DIR)
    recorded = json.loads(page_costs.COSTS_FILE.read_text())["p2_spectrum"]
    lens = len(list((store / "embedfilter_lens").glob("*.json")))
    assert recorded["seconds"] > 0 and set(recorded["experiments"]) == {"embedfilter_lens"}
    assert 0 < recorded["experiments"]["embedfilter_lens"]["results"] <= lens
    build.execute("p2_spectrum", "smoke", output_dir=build.BOOK_DIR)  # another profile: not the book's cost
    assert json.loads(page_costs.COSTS_FILE.read_text())["p2_spectrum"] == recorded


def test_a_truncated_or_foreign_result_file_stops_with_one_line_naming_it(tmp_path):
    from repro.store.results import CorruptResult, load_result, result_path, save_result

    params = {"task": "t"}
    save_result("corrupt_test", params, pd.DataFrame({"x": [1]}))
    path = result_path("corrupt_test", params)
    text = path.read_text()
    path.write_text(text[: len(text) // 2])  # a killed write or a bad merge
    with pytest.raises(CorruptResult, match=r"corrupt_test/.*\.json is not valid JSON .*: restore it from git "
                                            r"\(git checkout -- .*\) or delete it to compute it again$"):
        load_result("corrupt_test", params)
    path.write_text(text.replace('"t"', '"u"'))  # another key's parameters under this key
    with pytest.raises(CorruptResult, match="holds other parameters than its key"):
        load_result("corrupt_test", params)


@pytest.mark.integration
def test_a_page_build_over_a_corrupt_store_says_which_file_in_one_line(tmp_path, monkeypatch):
    import shutil

    from repro.cli import main

    store = tmp_path / "results"
    shutil.copytree(Path(__file__).parent / "data" / "smoke_results", store)
    for path in store.rglob("*.json"):
        path.write_text(path.read_text()[:20])
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(store))
    monkeypatch.setenv("REPRO_COMPUTE", "refuse")
    with pytest.raises(SystemExit) as stop:
        main(["build", "--profile", "smoke", "--only", "p2_spectrum", "--no-site", "--book-dir", str(tmp_path / "b")])
    message = str(stop.value)
    assert message.startswith("repro build: CorruptResult: ") and "is not valid JSON" in message
    assert "\n" not in message.split(" (the executed page")[0]


def test_every_committed_result_is_found_under_the_key_of_its_own_parameters(monkeypatch):
    """The rule on identities: a refactor of the key function, or a migration, must leave every committed result
    loading under its key (a file its key no longer names would silently recompute). ``load_result`` on each file's
    stored parameters returns that file."""
    from repro.store.paths import REPO_ROOT

    results = REPO_ROOT / "results"
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(results))
    files = [p for p in sorted(results.rglob("*.json")) if "params" in json.loads(p.read_text())]
    assert len(files) > 1000  # the committed store, not an empty folder
    lost = [p.relative_to(results) for p in files
            if result_path(p.parent.name, json.loads(p.read_text())["params"]) != p]
    assert not lost, f"{len(lost)} committed results no longer load under their key, e.g. {lost[:3]}"
    record = load_result(files[0].parent.name, json.loads(files[0].read_text())["params"])
    assert record is not None and record["params"] == json.loads(files[0].read_text())["params"]
