"""The book pipeline: papermill -> jupyter-book (smoke profile), pages rendered in headless Chromium."""

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from repro.book import build
from repro.book.build import parse_override
from repro.pages.parameters import NOTEBOOKS, page_parameters

SMOKE_STORE = Path(__file__).parent / "data" / "smoke_results"  # scripts/smoke_store.py
# the smoke book is built here, never in book/: the suite leaves the published site alone (conftest checks it)
SMOKE_BOOK = Path(tempfile.gettempdir()) / f"repro-smoke-book-{os.getpid()}"  # made by the build that needs it


def test_overrides_parse_literals_and_strings():
    assert parse_override("n_sentences=500") == ("n_sentences", 500)
    assert parse_override('backbones=["gemma3-270m"]') == ("backbones", ["gemma3-270m"])
    assert parse_override("suite=smoke") == ("suite", "smoke")
    with pytest.raises(ValueError, match="name=value"):
        parse_override("oops")


def test_unknown_notebook_profile_or_parameter_is_refused():
    with pytest.raises(ValueError, match="valid: " + ", ".join(NOTEBOOKS)):
        build.execute("p9_nothing", "smoke")
    with pytest.raises(ValueError, match="valid: smoke, standard"):
        build.execute("reproducibility", "huge")
    with pytest.raises(ValueError, match="no parameter"):
        build.execute("p1_layer_correlation", "smoke", {"n_sentence": 3})


def test_plumbing_cells_are_collapsed_and_only_the_parameters_and_reader_cells_show_their_code():
    # every code cell is the parameters cell (shown), a cell a reader is meant to edit ("reader-edit", shown), or
    # plumbing: loading, reshaping, tabulating, plotting ("hide-input": the result shows, the code collapses)
    for name in NOTEBOOKS:
        nb = nbformat.read(build.NOTEBOOKS_DIR / f"{name}.ipynb", as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                kinds = {"parameters", "reader-edit", "hide-input"} & set(cell.metadata.get("tags", []))
                assert len(kinds) == 1, (name, cell.source[:80])


def test_every_notebook_has_a_tagged_parameters_cell_and_no_outputs():
    import nbformat

    for name in NOTEBOOKS:
        nb = nbformat.read(build.NOTEBOOKS_DIR / f"{name}.ipynb", as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, name
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), name
        for key in NOTEBOOKS[name]["smoke"]:
            assert f"{key} =" in tagged[0].source, (name, key)


def test_every_page_parameter_has_one_type_and_every_profile_passes_it():
    from repro.book.notebook import check_page
    from repro.pages.parameters import PARAMETER_TYPES

    for name, profiles in NOTEBOOKS.items():
        for profile, params in profiles.items():
            assert set(params) <= set(PARAMETER_TYPES), (name, set(params) - set(PARAMETER_TYPES))
            # the notebook's namespace: its parameters cell (the standard profile) with the profile's values injected
            namespace = profiles["standard"] | params | {"recompute": False}
            assert check_page(namespace, name) == namespace, (name, profile)


def test_check_page_gives_one_clear_error_per_bad_or_missing_parameter():
    from repro.book.notebook import check_page

    good = NOTEBOOKS["p1_converged"]["standard"] | {"recompute": False}
    for bad, message in ((dict(models=[1, "2"]), "'models' must be a list of int"),
                         (dict(seeds=[0, True]), "'seeds' must be a list of int"),
                         (dict(backbone_seeds=[0]), "'backbone_seeds' must be dict"),
                         (dict(recompute="yes"), "'recompute' must be bool"),
                         (dict(suite=None), "'suite' must be str")):
        with pytest.raises(TypeError, match=message):
            check_page(good | bad, "p1_converged")
    with pytest.raises(TypeError, match="lacks its parameter\\(s\\) suite"):
        check_page({k: v for k, v in good.items() if k != "suite"}, "p1_converged")
    with pytest.raises(ValueError, match="unknown page 'p9'"):
        check_page(good, "p9")
    assert check_page(NOTEBOOKS["p3_tables"]["standard"], "p3_tables")["tasks"] is None  # tasks may be None


def test_no_figure_sets_a_font_below_the_books_minimum():
    import re

    import matplotlib as mpl

    from repro.book.notebook import MIN_FONT_PT, quiet

    with mpl.rc_context():
        quiet()
        sizes = {k: mpl.rcParams[k] for k in ("font.size", "axes.titlesize", "axes.labelsize", "legend.fontsize",
                                              "xtick.labelsize", "ytick.labelsize", "legend.title_fontsize",
                                              "figure.titlesize")}
    assert all(isinstance(v, (int, float)) and v >= MIN_FONT_PT for v in sizes.values()), sizes
    pattern = re.compile(r"(?:fontsize|labelsize|title_fontsize)\s*=\s*([0-9.]+|['\"][a-z-]+['\"])")
    root = Path(__file__).resolve().parent.parent
    small = []
    for path in [*root.joinpath("notebooks").glob("*.ipynb"), *root.joinpath("repro").rglob("*.py")]:
        for value in pattern.findall(path.read_text()):
            if value[0] in "'\"" or float(value) < MIN_FONT_PT:  # a relative size ("small") may fall below it
                small.append((path.name, value))
    assert not small, small


@pytest.mark.integration
def test_page_parameters_are_the_build_parameters_with_checked_overrides():
    assert page_parameters("p3_tables", "smoke") == NOTEBOOKS["p3_tables"]["smoke"]
    assert page_parameters("p3_tables", "smoke", {"suite": "small"})["suite"] == "small"
    with pytest.raises(ValueError, match="no parameter"):
        page_parameters("p3_tables", "smoke", {"sizes": [1]})
    with pytest.raises(TypeError, match="must be a dict"):
        page_parameters("p3_tables", "smoke", ["suite"])


@pytest.mark.integration
def test_wrong_parameter_type_fails_with_a_clear_message(tmp_path):
    from papermill.exceptions import PapermillExecutionError

    with pytest.raises(PapermillExecutionError, match="n_sentences.*must be int"):
        build.execute("p1_layer_correlation", "smoke", {"n_sentences": "many"}, output_dir=tmp_path)


@pytest.mark.integration
def test_smoke_book_builds_offline_with_figures_and_typeset_math(tmp_path):
    from repro.book.screenshot import screenshot

    if shutil.which("chromium") is None:
        pytest.fail("headless Chromium is required for this test: apt-get install chromium")
    # the committed smoke store (scripts/smoke_store.py): the build renders every page from it, computing nothing,
    # so this test exercises papermill, jupyter-book, MathJax and Chromium; the pages' computations have their own
    # test (test_smoke_pages_compute_their_own_results_from_a_store_that_lacks_them)
    store = Path(os.environ["REPRO_RESULTS_DIR"])
    shutil.copytree(SMOKE_STORE, store, dirs_exist_ok=True)
    before = {p.relative_to(store) for p in store.rglob("*.json")}
    os.environ["REPRO_CHECK_LEGENDS"] = "1"  # the pages' kernels report a legend over data (repro.book.legends)
    try:
        build.main(["--profile", "smoke", "--book-dir", str(SMOKE_BOOK)])
    finally:
        os.environ.pop("REPRO_CHECK_LEGENDS", None)
    computed = sorted(str(p.relative_to(store)) for p in store.rglob("*.json") if p.relative_to(store) not in before)
    assert not computed, f"the committed smoke store is stale, the build computed {computed[:4]}: run " \
                         "scripts/smoke_store.py and commit tests/data/smoke_results"
    from repro.book.legends import MARK

    covered = sorted(p.stem for p in SMOKE_BOOK.glob("*.ipynb") if MARK in p.read_text())
    assert not covered, f"a figure's legend covers its data on {covered} (repro.book.legends)"
    html = SMOKE_BOOK / "_build" / "html"
    for name in NOTEBOOKS:
        assert (html / f"{name}.html").is_file(), name
    for page in ("intro", *NOTEBOOKS):
        text = (html / f"{page}.html").read_text()
        assert "cdn." not in text and "googleapis" not in text, f"{page} loads something from the network"
    # every page rendered by one Chromium run at 1400 px: its DOM after its scripts (MathJax) ran, and its images
    from repro.book.notebook import FIGURE_DPI, MIN_FONT_PT
    from repro.book.screenshot import rendered_pages

    rendered = rendered_pages([html / f"{page}.html" for page in ("intro", *NOTEBOOKS)], width=1400)

    def dom(page: str) -> str:
        return rendered[f"{page}.html"]["dom"]

    # every figure is shown large enough that its smallest font stays at 9 pt (12 CSS px) or more
    need = 12 / (MIN_FONT_PT * FIGURE_DPI / 72)  # the smallest display scale of a figure's pixels
    figures = [(page, image) for page, shown in rendered.items() for image in shown["images"]
               if image["natural"] > 100]
    assert len(figures) >= 10, {page: shown["images"] for page, shown in rendered.items()}  # measured
    small = [(page, image["src"], round(image["shown"] / image["natural"], 2)) for page, image in figures
             if image["shown"] / image["natural"] < need]
    assert not small, f"figures shown too small to read (scale below {need:.2f}): {small}"
    # the table standard (repro.book.table_format, repro.book.notebook.show_claims): no table wider than the text
    # column at 1400 px, and a verdict column among the first (the index or the column that labels a row, then it)
    tables = [(page, table) for page, shown in rendered.items() for table in shown["tables"]]
    assert len(tables) >= 20, len(tables)  # measured
    wide = [(page, table["width"], table["column"], table["heads"][:4]) for page, table in tables
            if table["width"] > table["column"]]
    assert not wide, f"tables wider than the text column: {wide}"
    late = [(page, table["heads"][:6]) for page, table in tables if verdict_late(table["heads"])]
    assert not late, f"verdict columns a reader must scroll to: {late}"
    assert "mjx-container" in dom("intro"), "MathJax did not typeset the math (served locally)"
    assert "mjx-container" in dom("p1_layer_correlation") and "<img" in dom("p1_layer_correlation")
    assert "<img" in dom("p1_layerwise_mteb")
    main_table = dom("p2_main_table")
    assert "mjx-container" in main_table and "<img" in main_table and "54.57" in main_table  # quoted paper number
    for page in ("p2_filter_types", "p2_vocab_probe", "p2_spectrum", "p2_dimension_cost"):
        assert "<img" in dom(page), page
    assert "verdict (edge/2 is the best)" in dom("p2_filter_types")
    tables = dom("p3_tables")
    assert "mjx-container" in tables and "83.24" in tables and "AutoRegEmbed" in tables  # quoted, labelled
    assert "<img" in dom("p3_data_efficiency") and "<img" in dom("p3_memory")
    assert "79.82" in dom("p3_ablations")  # the paper's KL variant, quoted
    summary = dom("p3_summary")
    assert "What did not reproduce" in summary and "verdict" in summary and "83.24" in summary
    png = screenshot(html / "p1_layer_correlation.html", tmp_path / "figure.png")
    assert png.stat().st_size > 50_000
    for page in ("intro", *NOTEBOOKS):  # no stale or dead text on any page
        stale = stale_text(dom(page))
        assert not stale, (page, stale)
    # every current page's figures carry a caption with their takeaway (repro.book.notebook.caption)
    uncaptioned = [page for page in NOTEBOOKS if page not in superseded_pages() and "<img" in dom(page)
                   and "figure-takeaway" not in dom(page)]
    assert not uncaptioned, f"figures without a takeaway caption: {uncaptioned}"
    # every results page states its scale and deviations in the collapsed box (repro.book.notebook.scale_box)
    unscaled = [page for page in NOTEBOOKS if page not in ("intro", "rerun", "reproducibility", "book_cost")
                and "<summary>Scale and deviations</summary>" not in dom(page)]
    assert not unscaled, f"results pages without their Scale and deviations box: {unscaled}"
    # every rerun command a page prints runs as printed (resolved with --dry-run: nothing executed)
    commands = {c for page in ("intro", *NOTEBOOKS) for c in printed_commands(dom(page))}
    assert len(commands) >= 5, commands  # the rerun page's and each page's own were found
    for command in sorted(commands):
        assert dry_runs(command), command
    # the numbers two pages share come from one function: the intro's counts are the ledger's, and each paper's
    # summary counts a part of them
    intro, ledger = glued("intro"), glued("claims_ledger")
    summaries = [glued("p1_summary"), glued("p2_summary")]
    for key in ("supported", "contradicted", "tested"):
        assert intro[f"intro_headline_{key}"] == ledger[f"headline_{key}"], key
        assert sum(int(g[f"p{i}s_headline_{key}"]) for i, g in enumerate(summaries, 1)) <= int(intro[f"intro_headline_{key}"])


def verdict_late(heads: list[str]) -> bool:
    """Does a rendered table's header put its verdict column later than second after its index columns (the
    leading blank headers) and the column that labels a row?"""
    places = [i for i, head in enumerate(heads) if head.startswith("verdict")]
    index = next((i for i, head in enumerate(heads) if head), len(heads))
    return bool(places) and places[0] > index + 1


def printed_commands(dom: str) -> list[str]:
    """The ``.venv/bin/repro build ...`` commands a rendered page shows in its code (inline ``<code>`` or ``<pre>``
    blocks), one per line, without a trailing shell comment; the placeholders ``PAGE`` and ``-p NAME=VALUE`` filled
    with a real page and dropped."""
    import html as html_lib
    import re

    found = []
    for block in re.findall(r"<(code|pre)\b[^>]*>(.*?)</\1>", dom, flags=re.DOTALL):
        text = html_lib.unescape(re.sub(r"<[^>]+>", "", block[1]))
        for match in re.finditer(r"\.venv/bin/repro build[^\n#]*", text):
            command = re.sub(r"\s+", " ", match.group(0)).strip()
            found.append(command.replace("--only PAGE", "--only p2_spectrum").replace(" -p NAME=VALUE", ""))
    return found


def dry_runs(command: str) -> bool:
    """Does ``command`` (a printed ``.venv/bin/repro build`` line) parse and resolve its pages and parameters?"""
    import contextlib
    import io
    import shlex

    args = shlex.split(command)[2:]
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            build.main([*args, "--dry-run"])
    except SystemExit as stop:
        return stop.code in (0, None)
    return True


def test_a_printed_rerun_command_dry_runs_and_a_wrong_one_does_not():
    page = ('<pre>.venv/bin/repro build --only p3_summary -p \'tables={"suite": "small"}\'  # a comment</pre>'
            "<p>run <code>.venv/bin/repro build --only PAGE -p NAME=VALUE</code> (the text after it is prose).</p>")
    commands = printed_commands(page)
    assert commands == ['.venv/bin/repro build --only p3_summary -p \'tables={"suite": "small"}\'',
                        ".venv/bin/repro build --only p2_spectrum"]
    assert all(dry_runs(c) for c in commands)
    assert not dry_runs(".venv/bin/repro build --only p3_summary tables '{\"suite\": \"small\"}'")
    assert not dry_runs(".venv/bin/repro build --only p3_summary -p suite=small")  # not the page's parameter


def superseded_pages() -> set[str]:
    """The pages of the book's appendix of superseded runs (its table of contents)."""
    import yaml

    toc = yaml.safe_load((build.BOOK_DIR / "_toc.yml").read_text())
    return {chapter["file"] for part in toc["parts"] if "superseded" in part["caption"]
            for chapter in part["chapters"]}


def glued(page: str) -> dict[str, str]:
    """The values a built page glued (myst-nb), by name, as text."""
    nb = nbformat.read(SMOKE_BOOK / f"{page}.ipynb", as_version=4)
    return {o["metadata"]["scrapbook"]["name"]: str(next(iter(o["data"].values())))
            for cell in nb.cells for o in cell.get("outputs", []) if "scrapbook" in o.get("metadata", {})}


def stale_text(dom: str) -> list[str]:
    """What a rendered page must not show: a ``repro.`` name that does not import, a local path, a warning, a
    matplotlib font lookup's log line, or "pending" while no page is pending."""
    import importlib
    import re

    text = re.sub(r"<(style|script)\b.*?</\1>", " ", dom, flags=re.DOTALL | re.IGNORECASE)  # what a reader sees
    text = re.sub(r"<[^>]+>", " ", text)
    found = []
    for name in sorted(set(re.findall(r"\brepro(?:\.[A-Za-z_][A-Za-z_0-9]*)+", text))):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes down the rest
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attribute in parts[cut:]:
                obj = getattr(obj, attribute, None)
            if obj is None:
                found.append(f"dead name {name}")
            break
    found += [f"local path {m}" for m in re.findall(r"(?:/work/|/root/|/home/|/tmp/)\S+", text)]
    found += [f"warning {m}" for m in re.findall(r"\b\w*Warning\b", text)]
    found += [f"log line {m}" for m in re.findall(r"findfont: [^.]*", text)]  # a figure without its fonts
    if not build.PENDING and re.search(r"\bpending\b", text, re.IGNORECASE):
        found.append("'pending' with no page pending")
    return found


@pytest.mark.integration
def test_smoke_pages_compute_their_own_results_from_a_store_that_lacks_them(tmp_path):
    """One fast page per kind of work computes its results from nothing: encoding every layer (Figure 1), training a
    contrastive model (p1_train), the EmbedFilter lens (p2_vocab_probe); the sweep and Paper 3's training compute in
    their own tests (test_embedfilter, the two-lane test). The store holds the committed smoke store but for every
    result these pages computed (its provenance names the page), so the ledger their verdicts come from reads the
    other pages' results, as a reader's store would, and only the pages' own work is redone."""
    import json

    from repro.store.results import all_results

    pages = ("p1_layer_correlation", "p1_train", "p2_vocab_probe")
    store = Path(os.environ["REPRO_RESULTS_DIR"])
    shutil.copytree(SMOKE_STORE, store, dirs_exist_ok=True)
    own = {p.relative_to(store) for p in store.rglob("*.json")
           if json.loads(p.read_text())["provenance"].get("page") in pages}
    assert {p.parts[0] for p in own} >= {"p1_layer_correlation", "trained_runs", "embedfilter_lens"}
    for path in own:
        (store / path).unlink()
    kept = {p.relative_to(store): p.stat().st_mtime for p in store.rglob("*.json")}
    build.main(["--profile", "smoke", "--no-site", "--book-dir", str(tmp_path), "--only", *pages])
    for name in pages:
        page = nbformat.read(tmp_path / f"{name}.ipynb", as_version=4)
        assert not [o for c in page.cells for o in c.get("outputs", []) if o.get("output_type") == "error"], name
    assert all_results("p1_layer_correlation") and all_results("trained_runs") and all_results("embedfilter_lens")
    now = {p.relative_to(store): p.stat().st_mtime for p in store.rglob("*.json")}
    assert own <= set(now)  # every removed result computed again, under the same key
    # nothing else recomputed: a statistic derived from the recomputed runs may be new (keyed by its exact inputs)
    assert {p for p in kept if now.get(p) != kept[p]} == set()
    assert {p.parts[0] for p in set(now) - set(kept) - own} <= {"derived_stats"}


def test_pending_standard_pages_render_a_notice_not_hours_of_training(tmp_path, monkeypatch):
    import nbformat

    monkeypatch.setattr("papermill.execute_notebook", lambda *a, **k: pytest.fail("executed a pending page"))
    monkeypatch.setitem(build.PENDING, "p3_summary", "its runs are not trained yet")  # the mechanism, whatever is pending
    for name in build.PENDING:
        out = build.execute(name, "standard", output_dir=tmp_path)
        text = nbformat.read(out, as_version=4).cells[0].source
        assert "Not computed yet" in text and f"--only {name}" in text


@pytest.mark.integration
def test_two_lanes_split_a_pages_runs_and_the_page_completes(tmp_path, monkeypatch):
    from repro.store.results import all_results

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "results"))  # nothing stored: every run is computed
    monkeypatch.setenv("REPRO_RUNS_DIR", str(tmp_path / "runs"))
    build.main(["--profile", "smoke", "--no-site", "--book-dir", str(tmp_path / "book"), "--only", "p3_ablations",
                "--lanes", "2"])
    page = nbformat.read(tmp_path / "book" / "p3_ablations.ipynb", as_version=4)
    assert not [o for c in page.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    runs = all_results("autoreg_runs")
    assert sorted(r["params"]["stage"] for r in runs) == ["align", "align", "compress"]  # full, JS; one stage 1
    lanes = {r["provenance"]["lane"] for experiment in ("autoreg_runs", "autoreg_scores") for r in all_results(experiment)}
    assert lanes == {"0/2", "1/2"}  # both processes computed part of the page
    with pytest.raises(SystemExit):
        build.main(["--profile", "smoke", "--no-site", "--book-dir", str(tmp_path / "book"), "--only", "p3_ablations",
                    "--lanes", "2", "--recompute"])


@pytest.mark.integration
def test_the_list_parameter_hint_names_a_papermill_command_that_works(tmp_path):
    """A list given with papermill's -p arrives as a string: the error's hint names the -y form, and that exact
    form runs the page (from committed results)."""
    import os
    import re
    import subprocess
    import sys

    env = os.environ | {"REPRO_RESULTS_DIR": str(build.REPO_ROOT / "results")}  # the committed results
    papermill = [sys.executable, "-m", "papermill", "--cwd", str(build.REPO_ROOT), "-k", "python3",
                 str(build.NOTEBOOKS_DIR / "p2_vocab_probe.ipynb"), str(tmp_path / "out.ipynb")]
    wrong = subprocess.run(papermill + ["-p", "backbones", '["smollm2-135m"]'], capture_output=True, text=True,
                           env=env)
    assert wrong.returncode != 0 and "must be a list of str" in wrong.stderr + wrong.stdout
    hint = re.search(r"-y '([^']+)'", wrong.stderr + wrong.stdout)
    assert hint, wrong.stderr[-2000:]
    yaml = hint.group(1).replace("[a, b]", "[smollm2-135m]")
    right = subprocess.run(papermill + ["-y", yaml], capture_output=True, text=True, env=env)
    assert right.returncode == 0, right.stderr[-2000:]
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    assert "smollm2-135m" in str(out.cells) and "gemma3-270m" not in "".join(
        o.get("text", "") for c in out.cells for o in c.get("outputs", []) if c.cell_type == "code")


def test_pages_run_at_once_in_their_own_processes_and_the_reading_pages_after_the_others(monkeypatch):
    import json as json_module
    import subprocess
    import threading

    from repro.pages.parameters import READERS

    started, running, peak, lock = [], [], [0], threading.Lock()

    def fake_run(cmd, cwd, capture_output, text, env):
        name = json_module.loads(cmd[-1])["name"]
        with lock:
            started.append((name, env["OMP_NUM_THREADS"]))
            running.append(name)
            peak[0] = max(peak[0], len(running))
        time.sleep(0.05)
        with lock:
            running.remove(name)
        return subprocess.CompletedProcess(cmd, 1 if name == "p1_train" else 0, "", f"{name} broke")

    monkeypatch.setattr(build.subprocess, "run", fake_run)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(build.os, "cpu_count", lambda: 2)
    names = list(NOTEBOOKS)
    with pytest.raises(RuntimeError, match="pages failed: p1_train:\np1_train broke"):
        build.execute_at_once(names, "smoke", {}, jobs=2)
    order = [name for name, _ in started]
    assert sorted(order) == sorted(names)  # every page ran, the failed one did not stop the others
    assert max(order.index(r) for r in names if r not in READERS) < min(order.index(r) for r in READERS)
    assert {threads for _, threads in started} == {"1"} and peak[0] == 2
    with pytest.raises(ValueError, match="unknown notebook 'nope'"):
        build.execute_at_once(["nope"], "smoke", {}, jobs=2)
    with pytest.raises(SystemExit):
        build.main(["--profile", "smoke", "--jobs", "2", "--lanes", "2"])


def test_a_page_that_reads_stored_results_imports_no_training_or_evaluation_stack():
    # every page's imports, in one fresh process: mteb, peft, accelerate, transformers, datasets and
    # sentence-transformers cost ~6 s per page to import, and a page reading committed results uses none of them
    # (and quiet(), which every page calls, keeps myst-nb's glue from compiling jsonschema's IRI grammars: ~3 s)
    heavy = ["mteb", "peft", "accelerate", "transformers", "datasets", "sentence_transformers", "rfc3987_syntax"]
    imports = set()
    for name in NOTEBOOKS:
        for cell in nbformat.read(build.REPO_ROOT / "notebooks" / f"{name}.ipynb", as_version=4).cells:
            if cell.cell_type == "code":
                imports |= {ast.unparse(node) for node in ast.walk(ast.parse(cell.source))
                            if isinstance(node, (ast.Import, ast.ImportFrom))}
    assert any("repro.crosspaper.leaderboard" in line for line in imports)  # the pages' imports were found
    code = ("from repro.book.notebook import quiet; quiet()\n" + "\n".join(sorted(imports))
            + f"\nimport myst_nb.ext.glue, sys; print([m for m in {heavy!r} if sys.modules.get(m)])")
    done = subprocess.run([sys.executable, "-c", code], cwd=build.REPO_ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_a_readers_rerun_with_other_parameters_leaves_the_published_page_alone(tmp_path, monkeypatch):
    """`repro build --only PAGE -p ...` writes the rerun apart (reruns/) and builds no site; the published page in
    book/ is untouched. (From committed results: the page reads what is stored.)"""
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(build.REPO_ROOT / "results"))
    monkeypatch.setattr(build, "RERUNS_DIR", tmp_path / "reruns")
    monkeypatch.setattr(build, "BOOK_DIR", tmp_path / "book")
    monkeypatch.setattr(build, "build_site", lambda *a, **k: pytest.fail("a rerun rebuilt the site"))
    build.main(["--only", "p2_spectrum", "-p", 'backbones=["smollm2-135m"]'])
    page = nbformat.read(tmp_path / "reruns" / "p2_spectrum.ipynb", as_version=4)
    assert '"smollm2-135m"' in page.cells[1].source or "smollm2-135m" in str(page.metadata.get("papermill", {}))
    assert not (tmp_path / "book").exists()
    assert "smollm2-135m" in (tmp_path / "reruns" / "p2_spectrum.html").read_text()  # readable in a browser


def test_a_pages_lead_counts_its_verdicts_and_names_its_largest_tested_difference():
    import pandas as pd

    from repro.book.notebook import verdict_lead

    claims = pd.DataFrame({"comparison": ["5 vs 1", "3 vs 1", "2 vs 1", "4 vs 1"],
                           "category": ["STS", "Retrieval", None, "STS"],
                           "difference": [-5.08, 1.2, float("nan"), 9.9],
                           "verdict": ["contradicted", "supported", "untestable (one training run per "
                                                    "method: no run-level test)", "not testable (the same model)"]})
    assert verdict_lead(claims, "statements") == (
        "of 4 statements, 1 is supported at our scale, 1 contradicted and 2 neither (inconclusive or untestable); "
        "the largest difference is -5.08 points, 5 vs 1 (STS)")  # 9.9 was never tested: not the largest
    assert verdict_lead(None) == verdict_lead(claims.iloc[:0]) == "no comparisons tested yet (their results are " \
                                                                  "not stored)"
    # with the statements named, they are the unit (one verdict each), the comparisons after
    named = claims.assign(**{"statement": ["A", "A", "B", "C"]})
    assert verdict_lead(named).startswith("of 3 statements (4 comparisons), 0 are supported at our scale, 1 "
                                          "contradicted and 2 neither")
    # nothing decided: the page leads with its largest fact, not with zero counts
    undecided = named.assign(**{"verdict": ["inconclusive", "inconclusive", "missing results",
                                                         "untestable (one training run per method: no run-level test)"]})
    assert verdict_lead(undecided) == (
        "the largest tested difference is -5.08 points, 5 vs 1 (STS); of 3 statements (4 comparisons), 0 are "
        "supported at our scale, 0 contradicted and 3 neither (inconclusive or untestable)")


def _glued_page(value: str) -> nbformat.NotebookNode:
    """An executed page that glued ``value`` (myst-nb's output form) under the name "lead"."""
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    out = new_output("display_data", data={"text/plain": repr(value)}, metadata={"scrapbook": {"name": "lead"}})
    return new_notebook(cells=[new_code_cell("glue('lead', ...)", outputs=[out])])


def test_a_standard_build_stops_on_a_placeholder_and_a_smoke_or_rerun_build_does_not(tmp_path, monkeypatch):
    from repro.book.placeholders import placeholders

    assert placeholders(_glued_page("With both changes at once: computing")) == [
        "glued value 'lead' is 'With both changes at once: computing'"]
    assert placeholders(_glued_page("")) and placeholders(_glued_page("nan"))
    assert placeholders(_glued_page("of 4 statements, 2 supported")) == []
    empty = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("t", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": "<table><thead><tr><th>a</th></tr></thead><tbody></tbody></table>"})])])
    assert placeholders(empty) == ["an empty table"]

    def fake_execute(source, output, **kwargs):  # a page whose result is pending
        nbformat.write(_glued_page("computing"), output)

    monkeypatch.setattr("papermill.execute_notebook", fake_execute)
    with pytest.raises(build.PlaceholderError, match=r"^p2_spectrum: glued value 'lead' is 'computing'"):
        build.execute("p2_spectrum", "standard", output_dir=tmp_path)
    build.execute("p2_spectrum", "smoke", output_dir=tmp_path)  # the tests' tiny book: not published
    build.execute("p2_spectrum", "standard", {"backbones": ["smollm2-135m"]}, output_dir=tmp_path)  # a reader's rerun


@pytest.mark.integration
def test_a_corrupted_result_stops_a_page_build_with_one_line_naming_the_file(tmp_path, monkeypatch):
    """A truncated result file (a killed copy, a bad merge) stops the build with one line: the file and what to do,
    never a papermill traceback ending in JSONDecodeError."""
    import shutil
    import subprocess
    import sys

    store = tmp_path / "results"
    root = Path(__file__).resolve().parent.parent
    shutil.copytree(root / "tests" / "data" / "smoke_results" / "autoreg_cost", store / "autoreg_cost")
    victim = sorted((store / "autoreg_cost").glob("*.json"))[0]
    victim.write_text(victim.read_text()[:40])  # truncated mid-record
    env = {**os.environ, "REPRO_RESULTS_DIR": str(store), "REPRO_COMPUTE": "refuse", "REPRO_TRAINING": "refuse"}
    run = subprocess.run([sys.executable, "-m", "repro", "build", "--profile", "smoke", "--only", "p3_memory",
                          "--no-site", "--book-dir", str(tmp_path / "book")], capture_output=True, text=True, env=env,
                         cwd=root)
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("repro build: CorruptResult:") and victim.name in last and "restore it from git" in last
    assert "Traceback" not in run.stderr and "JSONDecodeError" not in run.stderr


def test_a_standard_build_stops_on_a_legend_over_data_and_checks_every_figure(tmp_path, monkeypatch):
    """The published build turns the legend check on in the page's kernel and stops on its line; a reader's rerun
    and the smoke book do not stop (the smoke book's own test fails on the line instead)."""
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    from repro.book.legends import CHECK_ENV, MARK

    seen = []

    def fake_execute(source, output, **kwargs):  # a page whose figure's legend covers two points
        seen.append(os.environ.get(CHECK_ENV))
        line = f"{MARK} 2 plotted point(s) of 'axes 1' lie under its legend\n"
        nbformat.write(new_notebook(cells=[new_code_cell("plt.show()", outputs=[
            new_output("stream", name="stderr", text=line)])]), output)

    monkeypatch.setattr("papermill.execute_notebook", fake_execute)
    with pytest.raises(build.LegendOverDataError, match=r"^p2_spectrum: legend covers data: 2 plotted point"):
        build.execute("p2_spectrum", "standard", output_dir=tmp_path)
    build.execute("p2_spectrum", "standard", {"backbones": ["smollm2-135m"]}, output_dir=tmp_path)  # a rerun
    assert seen[0] == "1" and seen[1] != "1" and os.environ.get(CHECK_ENV) != "1"  # on only for the published page


def test_a_pages_figures_get_matplotlibs_own_fonts_when_the_shared_font_cache_lacks_them(tmp_path):
    """A font cache written by another matplotlib of the same version (it lists no bundled STIX or Computer Modern
    font) is rebuilt by quiet(): the page's math text finds its fonts and prints no findfont line."""
    env = os.environ | {"MPLCONFIGDIR": str(tmp_path)}
    write = ("import os, matplotlib as mpl\nfrom matplotlib import font_manager as fm\n"
             "own = os.path.join(mpl.get_data_path(), 'fonts')\nm = fm.FontManager()\n"
             "m.ttflist = [f for f in m.ttflist if not f.fname.startswith(own)]\n"
             "fm.json_dump(m, os.path.join(mpl.get_cachedir(), f'fontlist-v{m.__version__}.json'))")  # what it reads
    subprocess.run([sys.executable, "-c", write], env=env, check=True, capture_output=True)
    page = ("import logging, io\nlog = io.StringIO(); logging.basicConfig(stream=log, level=logging.WARNING)\n"
            "from repro.book.notebook import quiet; quiet()\nimport matplotlib.pyplot as plt\n"
            "fig, ax = plt.subplots(); ax.set_title(r'$\\rho_{\\mathrm{spearman}}$'); fig.savefig(io.BytesIO())\n"
            "from matplotlib import font_manager as fm\n"
            "print(sum('STIX' in f.name for f in fm.fontManager.ttflist), 'findfont' in log.getvalue())")
    done = subprocess.run([sys.executable, "-c", page], env=env, check=True, capture_output=True, text=True)
    stix, findfont = done.stdout.split()
    assert int(stix) > 0 and findfont == "False", done.stdout
