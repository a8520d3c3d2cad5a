import math

import numpy as np
import pytest

from repro.core.encode import EncodeConfig
from repro.core.evaluate import evaluate_layers, run_mteb
from repro.core.reference import PUBLISHED, comparison_table, load_minilm
from repro.core.tasks import offline_task, suite_tasks
from repro.pooling_attention import layerwise as layerwise_module

pytestmark = pytest.mark.integration

SMOKE_TASKS = ["STSBenchmark", "AmazonCounterfactualClassification", "TwentyNewsgroupsClustering",
               "TwitterURLCorpus", "SciFact"]


def _count_forwards(backbone, fn):
    calls = []
    hook = backbone.decoder.register_forward_hook(lambda *a: calls.append(1))
    try:
        result = fn()
    finally:
        hook.remove()
    return result, len(calls)


def test_every_category_scores_from_one_forward_per_text_set(tiny, monkeypatch, tmp_path):
    """The real tasks of every category through mteb's evaluators; the count of forwards is the backbone's, so a
    tiny random decoder stands in for the real one (which costs 2 minutes here and shows nothing more)."""
    from repro.core import encode

    tasks = suite_tasks("smoke", SMOKE_TASKS)
    one, n_one = _count_forwards(tiny, lambda: evaluate_layers(
        tiny, tasks, EncodeConfig(max_length=64), layers=[3], poolings=["last"], progress=False))
    encode._MEMO.clear()
    monkeypatch.setenv("REPRO_STATES_DIR", str(tmp_path / "fresh_states"))
    many, n_many = _count_forwards(tiny, lambda: evaluate_layers(
        tiny, suite_tasks("smoke", SMOKE_TASKS), EncodeConfig(max_length=64), layers=[1, 3], progress=False))
    assert n_one > 0 and n_many == n_one, "more layers or poolings must not mean more forward passes"
    assert len(many) == len(SMOKE_TASKS) * 2 * 2
    assert set(many["category"]) == {"STS", "Classification", "Clustering", "PairClassification", "Retrieval"}
    assert many["main_score"].between(-1, 1).all()
    same = many[(many.layer == 3) & (many.pooling == "last")].reset_index(drop=True)
    assert np.allclose(same["main_score"], one["main_score"])


def test_constant_embedding_is_reported_as_nan_not_dropped(smollm2):
    # layer 0 + EOS appended: every text's last-token state is the EOS embedding -> constant vectors
    rows = evaluate_layers(smollm2, [offline_task("STS17", "smoke")], EncodeConfig(poolings=("last",)),
                           layers=[0, 30], progress=False)
    assert len(rows) == 2
    by_layer = dict(zip(rows["layer"], rows["main_score"]))
    assert math.isnan(by_layer[0])
    assert not math.isnan(by_layer[30])


def test_layerwise_runner_stores_and_reuses_results(smollm2, monkeypatch):
    from repro.core import backbones

    monkeypatch.setattr(backbones, "load_backbone", lambda *a, **k: smollm2)  # what LazyBackbone loads with
    df = layerwise_module.layerwise("smollm2-135m", "smoke", tasks=["STS17"], layers=[-1], progress=False)
    assert list(df["layer"].unique()) == [30]
    from repro.store.results import all_results

    (record,) = all_results("layerwise")
    sims = layerwise_module.pair_similarities(record, 30, "mean")
    assert sims is not None and sims.shape == (24,) and np.isfinite(sims).all()
    calls = []
    monkeypatch.setattr(layerwise_module, "evaluate_layers", lambda *a, **k: calls.append(1))
    monkeypatch.setattr(backbones, "load_backbone", lambda *a, **k: pytest.fail("loaded to read a stored result"))
    again = layerwise_module.layerwise("smollm2-135m", "smoke", tasks=["STS17"], layers=[-1], progress=False)
    assert calls == [] and np.allclose(again["main_score"], df["main_score"])
    with pytest.raises(ValueError, match="unknown task"):
        layerwise_module.layerwise("smollm2-135m", "smoke", tasks=["Nope"])


def test_harness_reproduces_published_minilm_scores_on_full_sts_sets():
    """The independent reference encoder through our tasks + mteb.evaluate gives MTEB's published scores."""
    tasks = ["STSBenchmark", "STS17", "BIOSSES"]
    rows = run_mteb(load_minilm(), [offline_task(t, "full") for t in tasks])
    table = comparison_table({"rows": rows.to_dict("records")})
    assert set(table["task"]) == set(tasks)
    for _, row in table.iterrows():
        assert abs(row["difference"]) <= 0.05, row.to_dict()
    assert all(t in PUBLISHED for t in tasks)


def test_stored_scores_export_to_mtebs_result_format_and_the_harness_check_passes_through_it(tmp_path, monkeypatch):
    """The committed MiniLM harness scores, written as mteb TaskResults in mteb.ResultCache's layout and read back by
    mteb's own loader, match MTEB's published scores; a recipe's scores export the same way, each task saying why it
    is not comparable with the public leaderboard."""
    from repro.core.mteb_results import LEADERBOARD, comparability, read_back
    from repro.recipes.mteb_format import REFERENCE_MODEL, export_recipe, export_reference
    from repro.store.paths import REPO_ROOT

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(REPO_ROOT / "results"))  # the committed scores, read only
    folder = export_reference(tmp_path / "cache")
    assert (folder / "model_meta.json").is_file() and ("| BIOSSES | MTEB's own | exactly MTEB's data, uncapped | "
                                                     + LEADERBOARD + " |") in (folder / "README.md").read_text()
    loaded = {task: score for (model, task), score in read_back(tmp_path / "cache").items() if model == REFERENCE_MODEL}
    assert set(loaded) == set(PUBLISHED)  # every STS task, through mteb's loader
    for task, score in loaded.items():
        assert abs(100 * score - PUBLISHED[task]) <= 0.05, (task, score)
    recipe = "smollm2-135m/prompteol+edge/2"
    export_recipe(recipe, tmp_path / "cache")
    assert len([k for k in read_back(tmp_path / "cache") if k[0] == f"repro/{recipe}"]) == 19
    assert comparability("BIOSSES", "full") == LEADERBOARD and comparability("STSBenchmark", "full").startswith(LEADERBOARD)
    assert comparability("STS17", "full") == LEADERBOARD + " (note: en-en subset only)"
    assert "capped 'compact' suite" in comparability("SciFact", "compact")
    assert "NOT comparable with MTEB's NFCorpus" in comparability("NFCorpusPreprocessed", "full")


def test_exported_results_carry_mtebs_revision_only_for_exactly_mtebs_uncapped_data(tmp_path, monkeypatch):
    """A recipe exported on `compact` (every task capped, some approximate) carries the book's revision in every
    file; the harness's reference on `full` keeps MTEB's revision on the exact STS sets; mteb.ResultCache loads all."""
    import json

    from repro.core.mteb_results import dataset_revision, read_back
    from repro.core.tasks import TASKS, data_fingerprint, suite_task
    from repro.recipes.mteb_format import REFERENCE_MODEL, export_recipe, export_reference
    from repro.store.paths import REPO_ROOT

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(REPO_ROOT / "results"))  # the committed scores, read only
    offline = {source.mteb_name or name: name for name, source in TASKS.items()}  # file name -> offline task
    recipe = "smollm2-135m/prompteol+edge/2"
    folder = export_recipe(recipe, tmp_path / "compact")
    files = sorted(p for p in folder.glob("*.json") if p.name != "model_meta.json")
    assert len(files) == 19
    for path in files:
        task, revision = offline[path.stem], json.loads(path.read_text())["dataset_revision"]
        mtebs = suite_task(task, "compact").metadata.dataset["revision"]
        assert revision != mtebs and revision.startswith(f"repro-compact-{data_fingerprint(task)}-capped"), path
        assert revision.endswith("-approximate") == (not TASKS[task].matches_mteb.startswith("exact")), path
    assert len([k for k in read_back(tmp_path / "compact") if k[0] == f"repro/{recipe}"]) == 19
    readme = (folder / "README.md").read_text()
    assert "| ArguAna | `repro-compact-" in readme and "capped-approximate` |" in readme

    reference = export_reference(tmp_path / "full")
    for path in reference.glob("*.json"):
        if path.name == "model_meta.json":
            continue
        task, revision = offline[path.stem], json.loads(path.read_text())["dataset_revision"]
        if TASKS[task].matches_mteb.startswith("exact"):  # the exact STS sets: MTEB's own revision
            assert revision == suite_task(task, "full").metadata.dataset["revision"], task
        else:
            assert revision.startswith("repro-full-") and revision.endswith("-approximate"), task
    assert len([k for k in read_back(tmp_path / "full") if k[0] == REFERENCE_MODEL]) >= 7
    assert dataset_revision("STS12", "full") is None and dataset_revision("NFCorpusPreprocessed", "full").endswith(
        "-approximate")
    with pytest.raises(ValueError, match="not an offline task"):
        dataset_revision("NoSuchTask", "compact")
