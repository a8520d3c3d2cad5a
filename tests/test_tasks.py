import numpy as np
import pytest

from repro.core import tasks
from repro.core.suites import SUITES, suite_caps_text
from repro.core.tasks import TASKS, data_fingerprint, offline_task, read_task, suite_tasks
from repro.store.paths import DATA_ENV, data_dir


def test_every_offline_task_loads_under_the_smoke_suite():
    for name, source in TASKS.items():
        task = offline_task(name, "smoke")
        task.load_data()
        assert task.hf_subsets == [source.hf_subset]
        assert list(task.eval_splits) == ["test"]
        split = task.dataset[source.hf_subset]
        assert "test" in split
        if source.category == "Classification":
            assert "train" in split


def test_suite_caps_are_applied_and_seeded():
    caps = SUITES["smoke"]
    sts = read_task("STS12", "smoke")["test"]
    assert len(sts["sentence1"]) == caps.sts_pairs
    assert read_task("STS12", "smoke") == read_task("STS12", "smoke")
    cls = read_task("Banking77Classification", "smoke")
    assert len(cls["test"]["text"]) == caps.cls_test and len(cls["train"]["text"]) == caps.cls_train
    clus = read_task("TwentyNewsgroupsClustering", "smoke")["test"]
    assert len(clus["sentences"]) == caps.clustering_subsets
    assert sum(map(len, clus["sentences"])) == caps.clustering_docs
    full = read_task("STS17", "full")["test"]
    assert len(full["sentence1"]) == 250


def test_full_suite_has_the_published_sizes():
    assert len(read_task("STSBenchmark", "full")["test"]["score"]) == 1379
    assert len(read_task("SICK-R", "full")["test"]["score"]) == 9927
    banking = read_task("Banking77Classification", "full")
    assert (len(banking["train"]["text"]), len(banking["test"]["text"])) == (10003, 3080)
    assert len(set(banking["train"]["label"])) == 77


def test_capped_retrieval_keeps_an_answer_for_every_query():
    for name in ("SciFact", "ArguAna", "NFCorpusPreprocessed"):
        data = read_task(name, "smoke")
        doc_ids = set(data["corpus"]["id"])
        assert len(doc_ids) <= SUITES["smoke"].corpus
        assert data["queries"]["id"], name
        for qid in data["queries"]["id"]:
            assert any(d in doc_ids and s > 0 for d, s in data["qrels"][qid].items()), (name, qid)


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="unknown task 'STS99'.*STS12"):
        offline_task("STS99")
    with pytest.raises(ValueError, match="unknown suite 'huge'; valid: smoke, standard, compact, small, full"):
        suite_tasks("huge")
    with pytest.raises(ValueError, match="unknown task"):
        suite_tasks("smoke", ["NotATask"])


def test_missing_data_folder_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'nowhere'}.*{DATA_ENV}"):
        read_task("STS12", "smoke")


def test_data_folder_can_be_relocated(monkeypatch, tmp_path):
    real = data_dir()
    (tmp_path / "eval" / "STS17").mkdir(parents=True)
    lines = (real / "eval" / "STS17" / "test.tsv").read_text().splitlines()[:4]
    (tmp_path / "eval" / "STS17" / "test.tsv").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    assert len(read_task("STS17", "full")["test"]["score"]) == 3


def test_fingerprint_depends_on_content(monkeypatch, tmp_path):
    real = data_fingerprint("STS17")
    assert real == data_fingerprint("STS17")
    (tmp_path / "eval" / "STS17").mkdir(parents=True)
    (tmp_path / "eval" / "STS17" / "test.tsv").write_text("sentence1\tsentence2\tscore\na\tb\t1\n")
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    assert data_fingerprint("STS17") != real


def test_online_names_resolve_to_real_mteb_tasks_without_download():
    online = tasks.online_task("NFCorpusPreprocessed")
    assert online.metadata.name == "NFCorpus"
    assert tasks.online_task("STS12").metadata.dataset["path"] == "mteb/sts12-sts"


def test_fast_undersampling_selects_exactly_what_mteb_selects():
    import mteb

    task = offline_task("EmotionClassification", "standard")
    task.load_data()
    train = task.dataset["default"]["train"]
    original = type(mteb.get_task("EmotionClassification"))._undersample_data
    ours_idx, theirs_idx = None, None
    for experiment in range(3):
        _, ours_idx, ours = task._undersample_data(train, experiment, ours_idx)
        _, theirs_idx, theirs = original(task, train, experiment, theirs_idx)
        assert ours == theirs and ours_idx == theirs_idx


def test_fast_classification_metrics_equal_mteb_on_the_label_column():
    """The offline classification task slices the label Column once; mteb's metrics are unchanged."""
    import mteb
    from datasets import Dataset

    task = offline_task("EmotionClassification", "smoke")
    base = type(mteb.get_task("EmotionClassification"))
    column = Dataset.from_dict({"label": [0, 1, 2, 1, 0, 2, 2, 1]})["label"]
    pred = np.array([0, 1, 1, 1, 0, 2, 0, 1])
    assert task._calculate_scores(column, pred) == base._calculate_scores(task, list(column), pred)


def test_suite_caps_in_words_name_every_cap_of_the_suite():
    text = suite_caps_text("compact")
    assert text.startswith("at most 500 STS pairs, 300 classification test examples, 1,000 classification training")
    assert "60 Imdb test texts" in text and "uncapped: clustering documents" in text and text.endswith("seed 0")
    assert "1,500 STS pairs" in suite_caps_text("standard")
    with pytest.raises(ValueError, match="unknown suite"):
        suite_caps_text("compactt")
