"""Build the book: papermill every notebook into ``book/``, then jupyter-book 1.x builds the site.

    .venv/bin/repro build                         # standard profile, every notebook, then the site
    .venv/bin/repro build --profile smoke         # what the tests build (minutes)
    .venv/bin/repro build --only p1_layer_correlation -p backbones='["gemma3-270m"]'
    .venv/bin/repro build --recompute             # ignore stored results
    .venv/bin/repro build --only p3_ablations --lanes 2   # two processes split the page's runs (repro.store.lanes)
    .venv/bin/repro build --profile smoke --jobs 2        # two pages at once, one thread each

Notebooks load stored results from ``results/`` for their exact parameters and compute only what is
missing, so the standard book rebuilds from committed results in minutes.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import papermill
from nbconvert import HTMLExporter
from nbformat.v4 import new_markdown_cell, new_notebook

from repro.book.dry_run import print_dry_run
from repro.book.legends import CHECK_ENV, MARK
from repro.book.page_costs import record_page
from repro.book.page_layout import glossary_line, parameters_last
from repro.book.placeholders import placeholders
from repro.core.commands import build_command
from repro.pages.parameters import NOTEBOOKS, PROFILES, READERS, page_parameters
from repro.store.lanes import LANE_ENV
from repro.store.paths import REPO_ROOT
from repro.store.results import READ_LOG_ENV

NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
BOOK_DIR = REPO_ROOT / "book"
RERUNS_DIR = REPO_ROOT / "reruns"  # a reader's rerun with other parameters: the published page stays as it is
CONFIG = REPO_ROOT / "_config.yml"


def parse_override(text: str) -> tuple[str, object]:
    """``name=value``; the value is a Python/JSON literal when it parses as one, else a string."""
    if "=" not in text:
        raise ValueError(f"parameter override must look like name=value, got {text!r}")
    name, raw = text.split("=", 1)
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return name.strip(), value


# Pages whose standard-profile results are not committed yet (long training runs still to do). A
# standard build renders them as a notice with the command that computes them, instead of silently
# starting hours of training; `--compute-pending` (or --only NAME) executes them for real.
PENDING: dict[str, str] = {}  # none now: every standard page's runs are committed


def pending_page(name: str, reason: str, output_dir: Path) -> Path:

    source = nbformat.read(NOTEBOOKS_DIR / f"{name}.ipynb", as_version=4)
    title = next((line for c in source.cells if c.cell_type == "markdown" for line in c.source.splitlines()
                  if line.startswith("# ")), f"# {name}")
    nb = new_notebook(cells=[new_markdown_cell(
        f"{title}\n\n**Not computed yet at the standard scale:** {reason}. This page is a notice, not a result.\n\n"
        f"To compute it (hours on 2 CPU cores; resumable):\n\n```bash\n{build_command(name)}\n```\n"
        f"\nThe smoke-profile build (`{build_command(None, None, '--profile', 'smoke')}`) executes this page end to "
        "end at a tiny scale.")])
    output = output_dir / f"{name}.ipynb"
    output_dir.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, output)
    return output


def _declares(name: str, parameter: str) -> bool:
    """Whether notebook ``name``'s parameters cell sets ``parameter``."""
    nb = nbformat.read(NOTEBOOKS_DIR / f"{name}.ipynb", as_version=4)
    return any(line.split("=")[0].strip() == parameter for cell in nb.cells
               if "parameters" in cell.metadata.get("tags", []) for line in cell.source.splitlines() if "=" in line)


def waiting_pages_note() -> str:
    """One sentence for the rerun page: the standard pages that wait for training runs not committed yet, if any."""
    if not PENDING:
        return "Every standard page renders from committed results; none waits for a training run."
    return (f"Standard pages whose long training runs are not committed yet ({', '.join(PENDING)}) render as a notice "
            "with the command that computes them; `repro build --compute-pending` executes them for real.")


def execute(name: str, profile: str, overrides: dict | None = None, recompute: bool = False,
            output_dir: Path = BOOK_DIR, compute_pending: bool = False) -> Path:

    params = page_parameters(name, profile, overrides)  # checks name, profile, overrides
    if recompute or _declares(name, "recompute"):  # a page that reads only what others store has no recompute
        params["recompute"] = recompute
    if profile == "standard" and name in PENDING and not compute_pending:
        return pending_page(name, PENDING[name], output_dir)
    output = output_dir / f"{name}.ipynb"
    output_dir.mkdir(parents=True, exist_ok=True)
    published = profile == "standard" and not overrides  # the book itself: no placeholder, no legend over data
    env_before = {key: os.environ.get(key) for key in ("REPRO_NOTEBOOK", READ_LOG_ENV, CHECK_ENV)}
    reads = Path(tempfile.mkstemp(prefix=f"{name}-reads-")[1])
    os.environ.update({"REPRO_NOTEBOOK": name, READ_LOG_ENV: str(reads)})  # the kernel inherits them
    if published:  # every figure's saved image is checked (repro.book.legends); the line shows only on a failure
        os.environ[CHECK_ENV] = "1"
    start = time.perf_counter()
    try:
        papermill.execute_notebook(str(NOTEBOOKS_DIR / f"{name}.ipynb"), str(output), parameters=params,
                                   kernel_name="python3", cwd=str(REPO_ROOT), progress_bar=False)
        if profile == "standard" and not overrides and not recompute and output_dir == BOOK_DIR:
            record_page(name, time.perf_counter() - start, reads.read_text().splitlines())
    finally:
        reads.unlink(missing_ok=True)
        for key, value in env_before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    nb = nbformat.read(output, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        # the page shows the parameters it ran with (papermill's injected cell) instead of the defaults
        if "parameters" in tags and "remove-cell" not in tags and any(
                "injected-parameters" in c.metadata.get("tags", []) for c in nb.cells):
            tags.append("remove-cell")
    nbformat.write(glossary_line(parameters_last(nb, name), name), output)
    if published:  # the published book: no placeholder is ever shown, no legend covers data
        found = placeholders(nb)
        if found:
            raise PlaceholderError(f"{name}: {'; '.join(found[:3])}: a published page shows no placeholder (list a "
                                   "run still to do on the rerun page's open runs instead)")
        covered = legend_marks(nb)
        if covered:
            raise LegendOverDataError(f"{name}: {'; '.join(covered[:3])} (move the legend beside or below the axes)")
    return output


def legend_marks(nb: nbformat.NotebookNode) -> list[str]:
    """The lines an executed page printed because a figure's legend covers its data (:data:`MARK`)."""
    lines = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.get("output_type") == "stream" else ""
            lines += [line.strip() for line in str(text).splitlines() if line.strip().startswith(MARK)]
    return lines


class LegendOverDataError(ValueError):
    """A standard page drew a figure whose legend covers some of its points (:mod:`repro.book.legends`)."""


class PlaceholderError(ValueError):
    """A standard page glued an empty or placeholder value, or showed an empty table (:mod:`repro.book.placeholders`)."""


def execute_in_lanes(name: str, profile: str, overrides: dict | None = None, lanes: int = 1,
                     compute_pending: bool = False, output_dir: Path = BOOK_DIR, recompute: bool = False) -> Path:
    """``name`` executed by ``lanes`` processes at once that split its runs (:mod:`repro.store.lanes`): lanes
    1..N-1 are child processes whose notebooks go to a scratch folder; lane 0 runs here and writes the page
    (every lane walks all the runs, waiting for those another lane holds, so each ends with the whole page).
    Each lane gets cpu_count / lanes threads unless OMP_NUM_THREADS is set."""

    if not isinstance(lanes, int) or lanes < 1:
        raise ValueError(f"lanes must be a positive integer, got {lanes!r}")
    if lanes == 1:
        return execute(name, profile, overrides, recompute, output_dir=output_dir, compute_pending=compute_pending)
    if recompute:
        raise ValueError("lanes cannot share the work of recompute (each lane would redo it)")
    page_parameters(name, profile, overrides)  # a bad page or parameter fails here, not in N processes
    threads = os.environ.get("OMP_NUM_THREADS") or str(max(1, (os.cpu_count() or 1) // lanes))
    saved = {key: os.environ.get(key) for key in (LANE_ENV, "OMP_NUM_THREADS")}
    code = ("import json, sys; from pathlib import Path; from repro.book.build import execute; a = json.loads(sys.argv[1]); "
            "execute(a['name'], a['profile'], a['overrides'], compute_pending=a['pending'], output_dir=Path(a['out']))")
    with tempfile.TemporaryDirectory(prefix=f"{name}-lanes-") as scratch:
        helpers = []
        for lane in range(1, lanes):
            args = {"name": name, "profile": profile, "overrides": overrides or {}, "pending": compute_pending,
                    "out": str(Path(scratch) / str(lane))}
            env = os.environ | {LANE_ENV: f"{lane}/{lanes}", "OMP_NUM_THREADS": threads}
            helpers.append(subprocess.Popen([sys.executable, "-c", code, json.dumps(args)], env=env, cwd=REPO_ROOT))
        try:
            os.environ.update({LANE_ENV: f"0/{lanes}", "OMP_NUM_THREADS": threads})  # the kernel inherits them
            output = execute(name, profile, overrides, compute_pending=compute_pending, output_dir=output_dir)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            codes = [helper.wait() for helper in helpers]
    failed = [f"lane {lane}: exit {code}" for lane, code in enumerate(codes, 1) if code]
    if failed:  # lane 0 completed the page (it computes what a dead lane left), but say a lane died
        raise RuntimeError(f"{name}: {', '.join(failed)} (the page itself completed in lane 0: {output})")
    return output


def execute_at_once(names: list[str], profile: str, overrides: dict | None, jobs: int, compute_pending: bool = False,
                    recompute: bool = False, output_dir: Path = BOOK_DIR) -> dict[str, float]:
    """Execute ``jobs`` pages at once, each in its own process with cpu_count / jobs threads (unless
    OMP_NUM_THREADS is set); the pages that only read what others store (:data:`repro.pages.parameters.READERS`) after
    all the others. Two pages never compute one result or run twice: the result store and the run store lock
    each (:func:`repro.store.lanes.exclusive`), so the second waits and then reads it. Returns each page's
    seconds; raises after every page ran if any failed."""
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    for name in names:
        page_parameters(name, profile, overrides)  # a bad page or parameter fails here, not in a worker
    threads = os.environ.get("OMP_NUM_THREADS") or str(max(1, (os.cpu_count() or 1) // jobs))
    code = ("import json, sys; from repro.book.build import execute; a = json.loads(sys.argv[1]); "
            "from pathlib import Path; execute(a['name'], a['profile'], a['overrides'], a['recompute'], "
            "compute_pending=a['pending'], output_dir=Path(a['out']))")

    def run(name: str) -> tuple[float, str]:
        args = {"name": name, "profile": profile, "overrides": overrides or {}, "recompute": recompute,
                "pending": compute_pending, "out": str(output_dir)}
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code, json.dumps(args)], cwd=REPO_ROOT, capture_output=True,
                              text=True, env=os.environ | {"OMP_NUM_THREADS": threads})
        seconds = round(time.perf_counter() - start, 1)
        print(f"executed {name} ({seconds} s)" + (" FAILED" if done.returncode else ""), flush=True)
        return seconds, done.stderr[-3000:] if done.returncode else ""

    timings, failed = {}, {}
    for wave in ([n for n in names if n not in READERS], [n for n in names if n in READERS]):
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for name, (seconds, error) in zip(wave, pool.map(run, wave)):
                timings[name] = seconds
                if error:
                    failed[name] = error
    if failed:
        raise RuntimeError("pages failed: " + "; ".join(f"{name}:\n{error}" for name, error in failed.items()))
    return {name: timings[name] for name in names}


def build_site(strict: bool = True, book_dir: Path = BOOK_DIR) -> Path:
    """jupyter-book 1.x over ``book_dir`` (``book/``, or a copy of its sources, :func:`book_copy`) with the
    top-level ``_config.yml`` (never the repo root)."""
    mathjax = BOOK_DIR / "_vendor" / "mathjax" / "tex-chtml.js"
    if not mathjax.is_file():
        raise FileNotFoundError(f"{mathjax} is missing: run scripts/setup.sh (it installs MathJax from npm)")
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(book_dir), "--config", str(CONFIG),
           "--path-output", str(book_dir)]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    subprocess.run(cmd, check=True, cwd=REPO_ROOT)
    return book_dir / "_build" / "html"


def rerun_html(notebook: Path) -> Path:
    """A rerun's executed page as one HTML file beside it (nbconvert: the whole notebook, code shown), so a reader
    opens a rerun in a browser as they read the book: ``reruns/PAGE.html``."""
    body, _ = HTMLExporter().from_notebook_node(nbformat.read(notebook, as_version=4))
    page = notebook.with_suffix(".html")
    page.write_text(body)
    return page


def book_copy(folder: Path) -> Path:
    """``folder`` made a book of its own: ``book/``'s sources copied in (not its executed pages or its site; the
    vendored MathJax linked), so a build there (a test's smoke book) leaves the published ``book/`` untouched."""
    folder = Path(folder).resolve()
    if folder == BOOK_DIR.resolve():
        return folder
    shutil.copytree(BOOK_DIR, folder, dirs_exist_ok=True, symlinks=True,
                    ignore=shutil.ignore_patterns("_build", "_vendor", "*.ipynb"))
    if not (folder / "_vendor").exists() and (BOOK_DIR / "_vendor").exists():
        (folder / "_vendor").symlink_to(BOOK_DIR / "_vendor", target_is_directory=True)
    return folder


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="standard", choices=PROFILES)
    parser.add_argument("--only", nargs="*", help="notebooks to execute (default: all)")
    parser.add_argument("-p", "--param", action="append", default=[], help="name=value override")
    parser.add_argument("--recompute", action="store_true")
    parser.add_argument("--lanes", type=int, default=1,
                        help="processes per page that split its runs (repro.store.lanes); not with --recompute")
    parser.add_argument("--jobs", type=int, default=1,
                        help="pages executed at once, each in its own process (the reading pages last); not with --lanes")
    parser.add_argument("--no-site", action="store_true", help="execute notebooks only")
    parser.add_argument("--book-dir", type=Path, default=None,
                        help="build the book in this folder (book/'s sources copied there) instead of book/")
    parser.add_argument("--dry-run", action="store_true",
                        help="resolve the pages and their parameters and print what would run, running nothing "
                             "(with --profile paper: also each page's settings and a GPU-hour estimate)")
    parser.add_argument("--compute-pending", action="store_true",
                        help="also execute the standard pages whose results are pending"
                             + (f" ({', '.join(PENDING)})" if PENDING else " (none now)"))
    args = parser.parse_args(argv)
    if args.lanes < 1 or (args.lanes > 1 and args.recompute):
        parser.error("--lanes must be >= 1, and lanes cannot share the work of --recompute (each would redo it)")
    if args.jobs < 1 or (args.jobs > 1 and args.lanes > 1):
        parser.error("--jobs must be >= 1, and pages run at once (--jobs) or split their runs (--lanes), not both")
    overrides = dict(parse_override(p) for p in args.param)
    names = args.only or list(NOTEBOOKS)
    names = [n for n in names if n not in READERS] + [n for n in names if n in READERS]  # readers after the others
    if args.dry_run:
        try:
            if args.profile == "paper" and not overrides:
                return print_dry_run(names)
            for name in names:  # checks the page's name and every override, as a run would; runs nothing
                params = page_parameters(name, args.profile, overrides if args.only else {})
                print(f"would execute {name} ({args.profile}) with {params}")
        except (ValueError, TypeError) as error:
            parser.error(str(error))
        return None
    pending = args.compute_pending or bool(args.only)
    rerun = bool(args.only and overrides)  # other parameters than the book's: written apart, no site
    book_dir = book_copy(args.book_dir) if args.book_dir else BOOK_DIR
    try:
        timings = _execute(names, args, overrides, pending, RERUNS_DIR if rerun else book_dir)
    except papermill.PapermillExecutionError as error:
        if error.ename not in PAGE_INPUT_ERRORS:  # a bug in a page: its traceback stays
            raise
        raise ValueError(f"{error.ename}: {error.evalue} (the executed page, with its traceback: "
                         f"{(RERUNS_DIR if rerun else book_dir).name}/{getattr(error, 'page', 'the page')}.ipynb)"
                         ) from None
    if rerun:
        pages = [rerun_html(RERUNS_DIR / f"{n}.ipynb") for n in names]
        print(f"rerun with {overrides}: {', '.join(str(p) for p in pages)} (open in a browser; the executed notebook "
              "beside it; the published pages and the site are unchanged)")
    elif not args.no_site:
        html = build_site(book_dir=book_dir)
        print(f"site: {html / 'index.html'}")
    print(json.dumps(timings))


# what a page raises for a bad parameter (its check_page, an unknown task or backbone): one line at the command line
PAGE_INPUT_ERRORS = ("TypeError", "ValueError", "FileNotFoundError", "KeyError", "CorruptResult")


def _execute(names: list[str], args, overrides: dict, pending: bool, output_dir: Path = BOOK_DIR) -> dict:
    if args.jobs > 1:
        return execute_at_once(names, args.profile, overrides if args.only else {}, args.jobs,
                               compute_pending=pending, recompute=args.recompute, output_dir=output_dir)
    timings = {}
    for name in names:
        start = time.perf_counter()
        try:
            execute_in_lanes(name, args.profile, overrides if args.only else {}, args.lanes,
                             compute_pending=pending, recompute=args.recompute, output_dir=output_dir)
        except papermill.PapermillExecutionError as error:
            error.page = name  # named in the one-line error if the page rejected its input
            raise
        timings[name] = round(time.perf_counter() - start, 1)
        print(f"executed {name} ({timings[name]} s)", flush=True)
    return timings


if __name__ == "__main__":
    main()
