import numpy as np
import pytest

from repro.embedfilter import claims as ef_claims
from repro.embedfilter import sweep as ef
from repro.store.results import all_results

pytestmark = pytest.mark.integration

VARIANTS = ["raw", "edge/1", "edge/2", "tail/2", "whiten/8", "randproj/2", "truncate/4"]
WHITEN_SENTENCES = 80  # whiten/8 keeps 72 dims: 80 NLI sentences fit it (encoding them is most of the sweep's cost)


def test_sweep_scores_every_variant_from_one_encode_and_resumes(monkeypatch):
    forwards = []
    from repro.core import encode as encode_module

    original = encode_module._forward_pooled
    monkeypatch.setattr(encode_module, "_forward_pooled", lambda *a, **k: forwards.append(1) or original(*a, **k))
    df = ef.embedfilter("smollm2-135m", "smoke", "prompteol", ["STSBenchmark", "EmotionClassification"],
                        VARIANTS, whiten_sentences=WHITEN_SENTENCES, progress=False)
    assert set(df["variant"]) == set(VARIANTS)
    assert df.groupby("task")["variant"].nunique().eq(len(VARIANTS)).all()
    dims = dict(zip(df["variant"], df["dims"]))
    assert dims == {"raw": 576, "edge/1": 576, "edge/2": 288, "tail/2": 288, "whiten/8": 72,
                    "randproj/2": 288, "truncate/4": 144}
    # one encode per text set: NLI fit sentences + 2 STS sides + classification train and test
    # (each at most a chunk), whatever the number of variants
    assert len(forwards) <= 5
    sts = df[df["task"] == "STSBenchmark"].set_index("variant")["main_score"]
    assert sts["edge/1"] == pytest.approx(sts["raw"], abs=2e-3)  # ratio 1 is a rotation
    assert sts.nunique() > 3  # filters change the score
    sims = ef.stored_pair_similarities("smoke")
    assert set(v for (_, _, task, v) in sims if task == "STSBenchmark") == set(VARIANTS)
    record = [r for r in all_results(ef.EXPERIMENT) if r["params"]["task"] == "STSBenchmark"][0]
    assert record["params"]["encode"]["truncation"] == "head_tail" and record["params"]["prompt"] == "prompteol"
    # a second run reads the stored results: nothing is encoded or scored again
    monkeypatch.setattr(ef, "evaluate_encoders", lambda *a, **k: pytest.fail("recomputed a stored result"))
    again = ef.embedfilter("smollm2-135m", "smoke", "prompteol", ["STSBenchmark", "EmotionClassification"],
                           VARIANTS, whiten_sentences=WHITEN_SENTENCES, progress=False)
    assert np.allclose(again["main_score"].to_numpy(), df["main_score"].to_numpy(), equal_nan=True)


def test_bad_arguments_fail_before_any_work():
    with pytest.raises(ValueError, match="EmbedFilter prompts"):
        ef.embedfilter("smollm2-135m", "smoke", "none", ["STSBenchmark"])
    with pytest.raises(ValueError, match="unknown filter variant"):
        ef.embedfilter("smollm2-135m", "smoke", "echo", ["STSBenchmark"], ["edge/two"])
    with pytest.raises(ValueError, match="unknown task"):
        ef.embedfilter("smollm2-135m", "smoke", "echo", ["STS99"])
    from repro.core.samples import nli_sentences  # whitening's sentences (imported where a whiten filter is built)

    with pytest.raises(ValueError, match="asked for"):
        nli_sentences(10**7)


def test_sweep_runs_parse_and_reject_bad_names():
    assert ef.parse_run("gemma3-270m:echo") == ("gemma3-270m", "echo")
    for bad in ["gemma3-270m", "gemma3-270m:", ":echo", "smollm2-135m:none"]:
        with pytest.raises(ValueError, match="backbone:prompt"):
            ef.parse_run(bad)
    empty = ef.sweep_scores([], "smoke", None, ["raw"])
    assert empty.empty and {"backbone", "prompt", "task", "variant", "main_score"} <= set(empty.columns)


def _synthetic_scores(offsets: dict[str, float], n_tasks: int = 10):
    import pandas as pd

    rng = np.random.default_rng(0)
    base = rng.uniform(0.4, 0.8, n_tasks)
    rows = [{"backbone": "b", "prompt": "p", "task": f"T{i}", "category": "STS", "variant": v,
             "main_score": base[i] + off + 0.001 * rng.standard_normal()}
            for v, off in offsets.items() for i in range(n_tasks)]
    return pd.DataFrame(rows)


def test_best_variant_verdicts_follow_the_wilcoxon_tests():
    clear = _synthetic_scores({"raw": 0.0, "edge/2": 0.03, "tail/2": 0.01, "head/2": -0.02})
    tests, summary = ef_claims.best_variant_tests(clear, "edge/2", ["raw", "edge/2", "tail/2", "head/2"])
    assert set(tests["against"]) == {"raw", "tail/2", "head/2"} and (tests["mean difference"] > 0).all()
    assert summary.iloc[0]["verdict (edge/2 is the best)"] == "supported" and summary.columns[0].startswith("verdict")
    tied = _synthetic_scores({"raw": 0.0, "edge/2": 0.03, "tail/2": 0.03})  # tail ties edge up to noise
    assert ef_claims.best_variant_tests(tied, "edge/2", ["raw", "tail/2"])[1].iloc[0, 0] != "supported"
    worse = _synthetic_scores({"raw": 0.0, "edge/2": 0.03, "tail/2": 0.06})
    assert ef_claims.best_variant_tests(worse, "edge/2", ["raw", "tail/2"])[1].iloc[0, 0] == "contradicted"
    raw_tests = ef_claims.tests_against_raw(clear, ["edge/2", "head/2"])
    assert list(raw_tests["verdict"]) == ["significant: edge/2 better", "significant: raw better"]
    assert "mean difference vs raw" in raw_tests


def test_the_official_protocol_normalises_clustering_and_pair_classification_and_reports_cosine_ap(monkeypatch):
    tasks = ["TwitterURLCorpus", "TwentyNewsgroupsClustering"]
    official = ef.embedfilter("smollm2-135m", "smoke", "prompteol", tasks, ["raw", "edge/2"], progress=False,
                              protocol="official")
    pair = official[official.task == "TwitterURLCorpus"]
    assert (pair["main_score"] == pair["cosine_ap"]).all() and (pair["mteb_main_score"] >= pair["cosine_ap"]).all()
    keys = {r["params"]["task"]: r["params"].get("protocol") for r in all_results(ef.EXPERIMENT)}
    assert keys == {"TwitterURLCorpus": "official", "TwentyNewsgroupsClustering": "official"}
    # other categories keep the earlier key (normalisation changes neither cosine STS nor retrieval)
    seen = []
    monkeypatch.setattr(ef, "load_or_compute", lambda experiment, params, compute, recompute=False:
                        seen.append(params) or {"rows": [{"task": "STS17", "variant": "raw", "main_score": 0.5}],
                                                "timings": {"task_seconds": 0.0}})
    ef.embedfilter("smollm2-135m", "smoke", "prompteol", ["STS17"], ["raw"], progress=False, protocol="official")
    assert "protocol" not in seen[0]
    with pytest.raises(ValueError, match="unknown protocol"):
        ef.embedfilter("smollm2-135m", "smoke", "prompteol", tasks, ["raw"], protocol="paper")


def test_the_tokenization_comparison_pairs_tasks_and_tests_over_them():
    import pandas as pd

    from repro.embedfilter.claims import tokenization_comparison

    tasks = [f"STS{i}" for i in range(8)]
    rows = [{"backbone": "b", "prompt": "prompteol", "task": t, "category": "STS", "variant": v, "main_score": 0.5 + i / 100}
            for i, t in enumerate(tasks) for v in ("raw", "edge/2", "edge/4")]
    pieces = pd.DataFrame(rows)
    official = pieces.assign(main_score=pieces["main_score"] + 0.01)  # one point higher everywhere
    per_task, tests = tokenization_comparison(pieces, official.iloc[:-3])  # the last task missing on one side
    assert set(per_task["variant"]) == {"raw", "edge/2"} and len(per_task) == 2 * 7
    assert per_task["official - pieces"].round(6).eq(1.0).all()
    assert tests.set_index("variant").loc["raw", "verdict"] == "significant: official better"
    assert tests.set_index("variant").loc["raw", "higher / lower"] == "7 / 0"
    assert tokenization_comparison(pieces, pieces.iloc[:0])[0].empty


def test_the_mechanism_claim_reads_the_removed_band_against_random_bands():
    from repro.embedfilter.claims import MECHANISM, mechanism_claims

    record = {"removed_spearman": 0.30, "random_spearman": [0.05, 0.10, -0.02, 0.08], "p_one_sided": 1 / 5,
              "params": {"filter": "edge/2"}}
    row = mechanism_claims({"b": record}).iloc[0]
    assert row["statement"] == MECHANISM and row["difference"] == pytest.approx(100 * (0.30 - 0.0525))
    assert row["verdict"] == "inconclusive"  # 4 random bands: p = 0.2 at best
    strong = record | {"random_spearman": [0.05] * 99, "p_one_sided": 1 / 100}
    assert mechanism_claims({"b": strong}).iloc[0]["verdict"] == "supported"
