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


def test_a_computation_says_what_it_computes_and_its_cost_before_it_starts(capsys):
    seen = []

    def compute():
        seen.append(capsys.readouterr().out)  # what was printed before the work began
        return pd.DataFrame({"x": [1]}), {"seconds": 1.0}, {}

    load_or_compute("announce_test", {"task": "t"}, compute)
    assert seen[0].startswith("computing announce_test/") and "Ctrl-C stops it" in seen[0]
    load_or_compute("announce_test", {"task": "t"}, compute)  # stored: nothing computed, nothing said
    assert len(seen) == 1 and capsys.readouterr().out == ""


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


def _narrowed(page: str) -> dict:
    """The page's list-valued parameters (two or more items) each cut to a strict subset: its last item dropped."""
    from repro.pages.parameters import page_parameters

    return {k: list(v)[:-1] for k, v in page_parameters(page, "standard").items()
            if isinstance(v, (list, tuple)) and len(v) >= 2}


def _pages_with_lists() -> list[str]:
    from repro.pages.parameters import NOTEBOOKS

    return [page for page in NOTEBOOKS if _narrowed(page)]


@pytest.mark.parametrize("page", _pages_with_lists())
def test_every_page_narrowed_to_a_subset_of_each_list_parameter_renders_from_the_store(page, tmp_path, monkeypatch):
    """Every list parameter of the page at once cut to a strict subset (its last item dropped), from the committed
    store, under the guard: the page renders and nothing is computed or written. (Through papermill's Python API,
    in this process: the command line's ``-y`` form is the main-table test's above, run as a reader types it.)"""
    import papermill

    results = ROOT / "results"
    before = {p: p.stat().st_mtime for p in results.rglob("*.json")}
    out = tmp_path / "out.ipynb"
    monkeypatch.delenv("REPRO_RESULTS_DIR")  # the committed results; the page's kernel inherits this environment
    monkeypatch.setenv("REPRO_COMPUTE", "refuse")
    monkeypatch.setenv("REPRO_TRAINING", "refuse")
    papermill.execute_notebook(str(ROOT / "notebooks" / f"{page}.ipynb"), str(out), parameters=_narrowed(page),
                               cwd=str(ROOT / "notebooks"), progress_bar=False, kernel_name="python3")
    assert {p: p.stat().st_mtime for p in results.rglob("*.json")} == before  # nothing written
    errors = [o for c in json.loads(out.read_text())["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
