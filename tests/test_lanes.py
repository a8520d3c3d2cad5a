"""Lanes: processes executing the same list of runs split it, each run computed once, every lane ends whole."""

from __future__ import annotations

import json
import multiprocessing
import os
import time

import pandas as pd
import pytest

from repro.store.lanes import LANE_ENV, current_lane, in_lane_order, lane_order

RUNS = ["a", "b", "c", "d"]


def test_lane_order_rotates_by_lane(monkeypatch):
    monkeypatch.delenv(LANE_ENV, raising=False)
    assert current_lane() == (0, 1) and lane_order(RUNS) == RUNS
    monkeypatch.setenv(LANE_ENV, "1/2")
    assert lane_order(RUNS) == ["c", "d", "a", "b"]
    monkeypatch.setenv(LANE_ENV, "2/3")
    assert lane_order(RUNS) == ["c", "d", "a", "b"]  # starts at 2*4//3 = 2
    assert lane_order([]) == []
    for bad in ("2/2", "1", "a/b", "-1/2"):
        monkeypatch.setenv(LANE_ENV, bad)
        with pytest.raises(ValueError, match="k/N"):
            lane_order(RUNS)


def test_in_lane_order_calls_in_lane_order_and_returns_in_list_order(monkeypatch):
    monkeypatch.setenv(LANE_ENV, "1/2")
    calls = []
    out = in_lane_order({key: (lambda key=key: calls.append(key) or key.upper()) for key in RUNS})
    assert calls == ["c", "d", "a", "b"]
    assert list(out.items()) == [("a", "A"), ("b", "B"), ("c", "C"), ("d", "D")]


def test_a_busy_run_is_deferred_to_after_the_others_then_waited_for(monkeypatch):
    from repro.store.lanes import _DEFER, Busy

    monkeypatch.setenv(LANE_ENV, "1/2")
    calls = []

    def run(key):
        calls.append((key, _DEFER.get()))
        if key == "c" and _DEFER.get():
            raise Busy("c")  # another lane holds it
        return key

    assert list(in_lane_order({key: (lambda key=key: run(key)) for key in RUNS}).values()) == RUNS
    # c is still busy when the deferred runs are tried again, and it is the only one left: the lane waits
    assert calls == [("c", True), ("d", True), ("a", True), ("b", True), ("c", True), ("c", False)]


def test_deferred_runs_that_became_free_are_computed_before_waiting_on_a_busy_one(monkeypatch):
    from repro.store.lanes import _DEFER, Busy

    monkeypatch.setenv(LANE_ENV, "0/2")
    calls, held = [], {"a": 1, "b": 2}  # another lane holds "a" for one more try, "b" for two

    def run(key):
        calls.append((key, _DEFER.get()))
        if _DEFER.get() and held.get(key, 0) > 0:
            held[key] -= 1
            raise Busy(key)
        return key.upper()

    out = in_lane_order({key: (lambda key=key: run(key)) for key in RUNS})
    assert out == {key: key.upper() for key in RUNS}
    # first pass: a and b busy; second pass: a free now, b still busy (a pass that got one done: no wait);
    # third pass: b free; nothing was ever waited for
    assert calls == [("a", True), ("b", True), ("c", True), ("d", True), ("a", True), ("b", True), ("b", True)]


def _lane(lane: int, barrier, folder: str) -> None:
    """One lane: every run through load_or_compute, each computation logged with the lane that did it."""
    os.environ.update({LANE_ENV: f"{lane}/2", "REPRO_RESULTS_DIR": f"{folder}/results",
                       "REPRO_CACHE_DIR": f"{folder}/cache"})
    from repro.store.results import load_or_compute

    def compute(run):
        with open(f"{folder}/computed.log", "a") as log:
            log.write(f"{lane} {run} start {time.time()}\n")
        time.sleep(4.0 if run == "c" else 1.0)  # lane 1 holds "c" while lane 0 reaches it
        with open(f"{folder}/computed.log", "a") as log:
            log.write(f"{lane} {run} end {time.time()}\n")
        return pd.DataFrame([{"run": run}]), {}, {}

    barrier.wait()
    records = in_lane_order({run: lambda run=run: load_or_compute("lanes_test", {"run": run},
                                                                   lambda: compute(run)) for run in RUNS})
    with open(f"{folder}/lane{lane}.json", "w") as out:
        json.dump([record["rows"][0]["run"] for record in records.values()], out)


def test_two_lanes_compute_each_run_once_defer_held_runs_and_both_end_with_all(tmp_path):
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    lanes = [context.Process(target=_lane, args=(lane, barrier, str(tmp_path))) for lane in (0, 1)]
    for process in lanes:
        process.start()
    for process in lanes:
        process.join(timeout=120)
        assert process.exitcode == 0
    events = {(run, event): (lane, float(at)) for lane, run, event, at in
              (line.split() for line in (tmp_path / "computed.log").read_text().splitlines())}
    assert sorted(run for run, event in events if event == "start") == RUNS  # each run computed exactly once
    assert {lane for lane, _ in events.values()} == {"0", "1"}  # and the work was split
    # lane 0 (a, b, c, d) met "c" held by lane 1 (c, d, a, b): it deferred "c" and computed "d" meanwhile
    assert events["c", "start"][0] == "1" and events["d", "start"][0] == "0"
    assert events["d", "start"][1] < events["c", "end"][1]
    for lane in (0, 1):
        assert json.loads((tmp_path / f"lane{lane}.json").read_text()) == RUNS
