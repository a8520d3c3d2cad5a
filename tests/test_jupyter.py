"""Readers open pages in JupyterLab: the venv's 'repro' kernel runs a page from committed results through a
headless Jupyter server (REST API + kernel websocket), and refuses to start a training."""

import json
import shutil
import sys
from pathlib import Path

import pytest

from repro.book import live
from repro.store import runs
from repro.store.paths import REPO_ROOT


def test_every_notebook_names_the_projects_kernel():
    for path in sorted((REPO_ROOT / "notebooks").glob("*.ipynb")):
        assert json.loads(path.read_text())["metadata"]["kernelspec"]["name"] == "repro", path.name
    spec = json.loads((Path(sys.prefix) / "share/jupyter/kernels/repro/kernel.json").read_text())
    assert Path(spec["argv"][0]).resolve() == Path(sys.executable).resolve()  # scripts/setup.sh registered it
    assert spec["env"] == {runs.TRAINING_ENV: "refuse"}


def test_the_kernel_refuses_a_training_that_the_store_would_start(tmp_path, monkeypatch):
    trained = []
    spec = runs.RunSpec(name="never-trained", experiment="test_refusal", params={"x": 1}, config=None,
                        train=lambda folder: trained.append(folder), load=lambda folder: (None, None),
                        weights_file="w.pt")
    monkeypatch.setenv(runs.RUNS_ENV, str(tmp_path / "runs"))
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv(runs.TRAINING_ENV, "refuse")
    with pytest.raises(runs.TrainingRefused, match="never-trained is not trained on this machine"):
        runs.ensure_trained(spec)
    monkeypatch.setenv(runs.TRAINING_ENV, "sometimes")
    with pytest.raises(ValueError, match="valid: allow, refuse"):
        runs.ensure_trained(spec)
    assert not trained


@pytest.mark.integration
def test_a_page_runs_in_the_projects_kernel_through_a_jupyter_server(tmp_path, monkeypatch):
    # the committed results, copied (the kernel inherits the server's environment): the page must render from
    # them alone, writing no new result
    shutil.copytree(REPO_ROOT / "results", tmp_path / "committed")
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "committed"))
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "committed").rglob("*.json"))
    with live.jupyter_server() as server:
        kernel, cells = live.run_notebook(
            server, "notebooks/p3_summary.ipynb",
            extra_code="import os, sys; print(os.environ.get('REPRO_TRAINING'), sys.executable)")
    assert kernel["name"] == "repro"
    assert [c.error for c in cells if c.error] == []
    outputs = [o for c in cells for o in c.outputs]
    assert any("text/html" in o.get("data", {}) for o in outputs)  # the page's tables rendered
    env, executable = cells[-1].outputs[0]["text"].split()
    assert env == "refuse" and Path(executable).resolve() == Path(sys.executable).resolve()
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "committed").rglob("*.json")) == before
