"""A rerun that narrows a page reads the store: a stored result whose key covers a superset answers a subset, and
under the guard (``REPRO_COMPUTE=refuse``) nothing is computed."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from repro.store.results import COMPUTE_ENV, load_covering, load_or_compute, save_result

ROOT = Path(__file__).resolve().parents[1]


def test_a_stored_superset_answers_a_subset_in_the_order_asked():
    params = {"backbone": "b", "task": "t", "variants": ["raw", "edge/2", "edge/4", "edge/8"], "seed": 0}
    rows = pd.DataFrame({"variant": params["variants"], "main_score": [0.1, 0.2, 0.3, 0.4]})
    save_result("sweep_test", params, rows)
    found = load_covering("sweep_test", params | {"variants": ["edge/8", "raw"]}, "variants", "variant")
    assert [r["variant"] for r in found["rows"]] == ["edge/8", "raw"] and found["covered_by"] == params["variants"]
    # another parameter, or a variant the stored list lacks: not covered
    assert load_covering("sweep_test", params | {"variants": ["raw"], "seed": 1}, "variants", "variant") is None
    assert load_covering("sweep_test", params | {"variants": ["raw", "edge/16"]}, "variants", "variant") is None


def test_the_guard_refuses_any_computation_in_one_line(monkeypatch):
    monkeypatch.setenv(COMPUTE_ENV, "refuse")
    with pytest.raises(RuntimeError, match=r"^REPRO_COMPUTE=refuse: sweep_test/.* is not stored and would be computed"):
        load_or_compute("sweep_test", {"task": "t"}, lambda: (pd.DataFrame(), {}, {}))


def test_the_main_table_narrowed_to_one_backbone_and_three_ratios_renders_from_the_store(monkeypatch, tmp_path):
    """The issue's command: one backbone, three of the four ratios, from the committed store, under the guard."""
    monkeypatch.delenv("REPRO_RESULTS_DIR", raising=False)  # the committed results
    before = {p: p.stat().st_mtime for p in (ROOT / "results" / "embedfilter").glob("*.json")}
    out = tmp_path / "out.ipynb"
    env = {"REPRO_COMPUTE": "refuse", "REPRO_TRAINING": "refuse"}
    done = subprocess.run([sys.executable, "-m", "papermill", str(ROOT / "notebooks" / "p2_main_table.ipynb"),
                           str(out), "-y", "backbones: [gemma3-270m]", "-y", "ratios: [1, 2, 8]", "--cwd",
                           str(ROOT / "notebooks")], capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, **env})
    assert done.returncode == 0, done.stderr[-2000:]
    after = {p: p.stat().st_mtime for p in (ROOT / "results" / "embedfilter").glob("*.json")}
    assert after == before  # nothing written
    errors = [o for c in json.loads(out.read_text())["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
