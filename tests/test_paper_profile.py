"""The `paper` profile resolves every page offline (nothing downloaded) and prints its settings and GPU-hours."""

from __future__ import annotations

import pytest


def test_every_page_has_a_paper_profile_with_the_notebooks_parameters():
    from repro.pages.parameters import NOTEBOOKS, page_parameters

    for name, profiles in NOTEBOOKS.items():
        assert set(page_parameters(name, "paper")) == set(profiles["standard"]), name
    assert page_parameters("p1_tables", "paper")["backbones"] == ["mistralai/Mistral-7B-v0.1"]
    assert page_parameters("p3_tables", "paper")["suite"] == "mteb"


def test_dry_run_resolves_every_page_and_estimates_gpu_hours(capsys):
    from repro.book.build import main
    from repro.pages.parameters import NOTEBOOKS

    main(["--profile", "paper", "--dry-run"])
    out = capsys.readouterr().out
    for name in NOTEBOOKS:
        assert f"== {name} (paper" in out
    assert "MTEB tasks: 52" in out and "total: ~" in out and "nothing downloaded" in out
    # any profile dry-runs: what each page would execute, nothing run
    main(["--profile", "standard", "--dry-run", "--only", "p3_memory"])
    out = capsys.readouterr().out
    assert "would execute p3_memory (standard)" in out and "p1_tables" not in out


def test_the_mteb_suite_checks_task_names_against_mteb():
    import mteb

    from repro.core.tasks import check_task_names, data_fingerprint
    from repro.pages.paper_profile import P1_TASKS, P2_TASKS, P3_TASKS, page_work

    # MTEB(eng, classic), as the official EmbedFilter code asserts (CQADupstack as its 12 forums)
    classic = {t.metadata.name for t in mteb.get_benchmark("MTEB(eng, classic)").tasks}
    assert classic - set(P2_TASKS) == {"CQADupstackRetrieval"}
    assert {t for t in P2_TASKS if not t.startswith("CQADupstack")} <= classic
    assert check_task_names(P1_TASKS + P3_TASKS, "mteb")
    with pytest.raises(ValueError, match="unknown MTEB task"):
        check_task_names(["STSBenchmark", "NoSuchTask"], "mteb")
    with pytest.raises(ValueError, match="unknown task"):
        check_task_names(["FEVER"])  # not in the offline data: only the mteb suite takes it
    assert data_fingerprint("FEVER").startswith("mteb-")
    work = page_work("p1_tables", {"backbones": ["mistralai/Mistral-7B-v0.1"], "models": [1], "steps": 10,
                                   "batch_size": 2, "max_length": 8, "tasks": ["STSBenchmark"]})
    assert [w.kind for w in work] == ["train-lora", "encode"] and all(w.gpu_hours > 0 for w in work)
    assert work[0].tokens == 10 * 2 * 3 * 8
