"""Frames derived from the whole store (the claims ledger), cached between processes: keyed by everything that
changes them, the reads of their build replayed, nothing cached from a build that stored results."""

import pandas as pd
import pytest

from repro.store import derived
from repro.store.results import READ_LOG_ENV, load_result, recording_reads, save_result


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(derived.ENV, str(tmp_path / "derived"))
    save_result("toy", {"n": 1}, pd.DataFrame([{"score": 1.0}]))
    save_result("toy", {"n": 2}, pd.DataFrame([{"score": 2.0}]))
    builds = []

    def build():  # reads the store, as the ledger does
        builds.append(1)
        return pd.DataFrame([load_result("toy", {"n": n})["rows"][0] for n in (1, 2)])

    return builds, build


def test_a_frame_is_built_once_per_store_and_its_reads_are_replayed(store, tmp_path, monkeypatch):
    builds, build = store
    log = tmp_path / "reads.log"
    monkeypatch.setenv(READ_LOG_ENV, str(log))
    first = derived.cached_frame("toy", {"profile": "smoke"}, build)
    read = log.read_text().splitlines()
    assert len(read) == 2 and builds == [1]
    with recording_reads() as reads:
        again = derived.cached_frame("toy", {"profile": "smoke"}, build)
    assert builds == [1]  # from the cache
    pd.testing.assert_frame_equal(first, again)
    assert log.read_text().splitlines() == read + read and reads == read  # a page's cost is the same either way
    derived.cached_frame("toy", {"profile": "standard"}, build)  # other parameters: another frame
    assert builds == [1, 1]


def test_a_changed_result_other_code_or_no_cache_folder_builds_again(store, monkeypatch):
    builds, build = store
    derived.cached_frame("toy", {}, build)
    save_result("toy", {"n": 2}, pd.DataFrame([{"score": 3.0}]))  # the store changed: the frame is built from the new result
    assert derived.cached_frame("toy", {}, build)["score"].tolist() == [1.0, 3.0] and len(builds) == 2
    monkeypatch.setattr(derived, "LIBRARIES", ("numpy", "no-such-library"))  # another environment
    derived.cached_frame("toy", {}, build)
    assert len(builds) == 3
    for off in ("off", ""):
        monkeypatch.setenv(derived.ENV, off)
        derived.cached_frame("toy", {}, build)
    assert len(builds) == 5


def test_a_build_that_stores_a_result_is_not_cached_and_an_unreadable_file_is_built_again(store, tmp_path):
    builds, build = store

    def computing():  # a page that computes what was missing: the store it was keyed by is gone
        save_result("toy", {"n": 3}, pd.DataFrame([{"score": 3.0}]))
        return build()

    derived.cached_frame("toy", {"p": 1}, computing)
    assert not list((tmp_path / "derived").glob("toy-*.pkl"))
    derived.cached_frame("toy", {"p": 2}, build)
    (cached,) = (tmp_path / "derived").glob("toy-*.pkl")
    cached.write_bytes(b"truncated")
    assert derived.cached_frame("toy", {"p": 2}, build)["score"].tolist() == [1.0, 2.0]
    assert len(builds) == 3 and len(list((tmp_path / "derived").glob("toy-*.pkl"))) == 1


def test_the_ledger_is_cached_only_where_a_page_asks(monkeypatch, tmp_path):
    from repro.book.notebook import check_page
    from repro.store.paths import CACHE_ENV

    monkeypatch.delenv(derived.ENV, raising=False)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    assert derived._folder() is None  # the library alone caches nothing (a test may patch what the ledger calls)
    namespace = {"profile": "smoke", "backbone": "smollm2-135m", "batch_sizes": [4], "steps": 1, "max_length": 8}
    check_page(namespace, "p3_memory")
    assert derived._folder() == tmp_path / "cache" / "derived"
