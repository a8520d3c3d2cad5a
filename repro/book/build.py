"""Build the book: papermill every notebook into ``book/``, then jupyter-book 1.x builds the site.

    python -m repro.book.build                         # standard profile, every notebook, then the site
    python -m repro.book.build --profile smoke         # what the tests build (minutes)
    python -m repro.book.build --only p1_layer_correlation -p backbones='["gemma3-270m"]'
    python -m repro.book.build --recompute             # ignore stored results
    python -m repro.book.build --only p3_ablations --lanes 2   # two processes split the page's runs (repro.store.lanes)

Notebooks load stored results from ``results/`` for their exact parameters and compute only what is
missing, so the standard book rebuilds from committed results in minutes.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import papermill
from nbformat.v4 import new_markdown_cell, new_notebook

from repro.store.lanes import LANE_ENV
from repro.store.paths import REPO_ROOT

NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
BOOK_DIR = REPO_ROOT / "book"
CONFIG = REPO_ROOT / "_config.yml"

# The EmbedFilter sweeps the standard book shows (committed by scripts/p2_sweeps.sh; the grid is every backbone x
# prompt whose sweep over P2_TASKS is committed)
P2_BACKBONES = ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"]
P2_PROMPTS = ["prompteol", "echo"]
P2_SKIP: list[str] = []  # "backbone:prompt" runs of that grid whose sweeps are not committed yet
P2_TASKS = ["STSBenchmark", "SICK-R", "BIOSSES", "STS12", "STS13", "STS14", "STS15", "STS16", "STS17"]

# Table 5's tasks on the second backbone: the compact suite without its two slowest tasks to encode (IMDB and
# ArguAna, ~35% of an evaluation); every category keeps at least one task
P1_ROBUSTNESS_TASKS = ["STSBenchmark", "SICK-R", "BIOSSES", "STS12", "STS13", "STS14", "STS15", "STS16", "STS17",
                       "AmazonCounterfactualClassification", "Banking77Classification", "EmotionClassification",
                       "TweetSentimentExtractionClassification", "TwentyNewsgroupsClustering", "TwitterURLCorpus",
                       "SciFact", "NFCorpusPreprocessed"]

# Every notebook, in book order, with its parameters per profile. `paper` profiles only resolve.
NOTEBOOKS: dict[str, dict[str, dict]] = {
    "p1_layer_correlation": {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "n_sentences": 64},
        "standard": {"profile": "standard", "backbones": ["smollm2-135m", "gemma3-270m"], "n_sentences": 1000},
    },
    "p1_layerwise_mteb": {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "suite": "smoke",
                  "tasks": ["STSBenchmark", "STS17", "AmazonCounterfactualClassification",
                            "TwentyNewsgroupsClustering", "TwitterURLCorpus", "SciFact"],
                  "layer_step": 10, "n_reference": 200},
        "standard": {"profile": "standard", "backbones": ["smollm2-135m", "gemma3-270m"], "suite": "standard",
                     "tasks": None, "layer_step": 1, "n_reference": 2000},
    },
    "p1_train": {
        "smoke": {"profile": "smoke", "backbone": "smollm2-135m", "model": 5, "steps": 2, "batch_size": 4,
                  "max_length": 32, "validation_sts_pairs": 16, "validation_triplets": 8, "suite": "smoke",
                  "tasks": ["STSBenchmark", "STS17"], "seed": 0},
        "standard": {"profile": "standard", "backbone": "smollm2-135m", "model": 5, "steps": 150, "batch_size": 16,
                     "max_length": 64, "validation_sts_pairs": 500, "validation_triplets": 300, "suite": "compact",
                     "tasks": None, "seed": 0},
    },
    "p1_tables": {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "models": [1, 2, 3, 4, 5], "steps": 2,
                  "batch_size": 4, "max_length": 32, "validation_sts_pairs": 16, "validation_triplets": 8,
                  "suite": "smoke", "tasks": ["STSBenchmark", "STS17"], "seed": 0},
        "standard": {"profile": "standard", "backbones": ["smollm2-135m"], "models": [1, 2, 3, 4, 5], "steps": 150,
                     "batch_size": 16, "max_length": 64, "validation_sts_pairs": 500, "validation_triplets": 300,
                     "suite": "compact", "tasks": None, "seed": 0},
    },
    "p1_robustness": {
        # the smoke profile reuses p1_tables' smoke models (the mechanics, not a second backbone)
        "smoke": {"profile": "smoke", "backbone": "smollm2-135m", "reference_backbone": "smollm2-135m",
                  "models": [1, 2, 3, 4, 5], "steps": 2, "reference_steps": 2, "batch_size": 4, "max_length": 32,
                  "validation_sts_pairs": 16, "validation_triplets": 8, "suite": "smoke",
                  "tasks": ["STSBenchmark", "STS17"], "seed": 0},
        "standard": {"profile": "standard", "backbone": "gemma3-270m", "reference_backbone": "smollm2-135m",
                     "models": [1, 2, 3, 4, 5], "steps": 150, "reference_steps": 150, "batch_size": 16,
                     "max_length": 64, "validation_sts_pairs": 500, "validation_triplets": 300, "suite": "compact",
                     "tasks": P1_ROBUSTNESS_TASKS, "seed": 0},
    },
    **{name: {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "prompts": ["prompteol"], "suite": "smoke",
                  "tasks": ["STSBenchmark", "STS17", "SciFact"], "all_task_runs": [],
                  "ratios": [1, 2]},
        # every backbone x prompt on the 9 STS sets (scripts/p2_sweeps.sh), SmolLM2/PromptEOL on all 19 tasks
        "standard": {"profile": "standard", "backbones": P2_BACKBONES, "prompts": P2_PROMPTS, "skip_runs": P2_SKIP,
                     "suite": "compact", "tasks": P2_TASKS, "all_task_runs": ["smollm2-135m:prompteol"], "ratios": [1, 2, 4, 8]},
    } for name in ("p2_main_table", "p2_filter_types")},
    "p2_vocab_probe": {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "prompt": "prompteol", "n_sentences": 40,
                  "n_resamples": 50},
        "standard": {"profile": "standard", "backbones": ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"],
                     "prompt": "prompteol", "n_sentences": 500, "n_resamples": 1000},
    },
    "p2_spectrum": {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "prompts": ["prompteol"], "n_sentences": 40},
        "standard": {"profile": "standard", "backbones": ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"],
                     "prompts": ["prompteol", "echo"], "n_sentences": 500},
    },
    "p2_dimension_cost": {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "prompts": ["prompteol"], "suite": "smoke",
                  "tasks": ["STSBenchmark", "STS17", "SciFact"], "ratios": [1, 2]},
        # PromptEOL sweeps also cover SciFact (scripts/p2_sweeps.sh)
        "standard": {"profile": "standard", "backbones": P2_BACKBONES, "prompts": ["prompteol"], "skip_runs": [],
                     "suite": "compact",
                     "tasks": ["SciFact"], "ratios": [1, 2, 4, 8]},
    },
    "p3_tables": {
        "smoke": {"profile": "smoke", "backbone": "smollm2-135m", "suite": "smoke", "finetune": "full",
                  "compress_steps": 1, "compress_max_length": 64, "compress_lr": 1e-4, "compress_data": "instruction", "align_steps": 1, "align_lr": 5e-06, "warmup_steps": 0, "batch_size": 2,
                  "train_examples": 8, "validation_examples": 4, "validation_sts_pairs": 8, "validation_triplets": 8,
                  "seed": 0, "tasks": ["STSBenchmark"],
                  "methods": ["last token", "PromptEOL", "last token, in-batch", "compression only", "AutoRegEmbed"]},
        "standard": {"profile": "standard", "backbone": "smollm2-135m", "suite": "compact", "finetune": "full",
                     "compress_steps": 300, "compress_max_length": 160, "compress_lr": 1e-4, "compress_data": "instruction", "align_steps": 150, "align_lr": 5e-06,
                     "warmup_steps": 10, "batch_size": 8, "train_examples": 0, "validation_examples": 64, "validation_sts_pairs": 300,
                     "validation_triplets": 300, "seed": 0, "tasks": None, "methods": None},
    },
    "p3_data_efficiency": {
        "smoke": {"profile": "smoke", "backbone": "smollm2-135m", "suite": "smoke", "finetune": "full",
                  "compress_steps": 1, "compress_max_length": 64, "compress_lr": 1e-4, "compress_data": "instruction", "align_steps": 1, "align_lr": 5e-06, "warmup_steps": 0, "batch_size": 2,
                  "train_examples": 8, "validation_examples": 4, "validation_sts_pairs": 8, "validation_triplets": 8,
                  "seed": 0, "tasks": ["STSBenchmark"], "sizes": [4, 8], "seeds": [0],
                  "epochs": 0.25, "methods": ["AutoRegEmbed", "last token, in-batch"],
                  "references": ["compression only", "PromptEOL"]},
        "standard": {"profile": "standard", "backbone": "smollm2-135m", "suite": "small", "finetune": "full",
                     "compress_steps": 300, "compress_max_length": 160, "compress_lr": 1e-4, "compress_data": "instruction", "align_steps": 150, "align_lr": 5e-06,
                     "warmup_steps": 10, "batch_size": 8, "train_examples": 0, "validation_examples": 64, "validation_sts_pairs": 300,
                     "validation_triplets": 300, "seed": 0, "tasks": None, "sizes": [64, 128, 256, 512, 1024],
                     "seeds": [0, 1], "epochs": 1.0,
                     # the two in-batch baselines (the paper's strongest early risers); the hard-negative ones
                     # are parameters (-p methods=...) left out of the book's budget
                     "methods": ["AutoRegEmbed", "last token, in-batch", "mean, in-batch"],
                     "references": ["compression only", "PromptEOL"]},
    },
    "p3_ablations": {
        "smoke": {"profile": "smoke", "backbone": "smollm2-135m", "suite": "smoke", "finetune": "full",
                  "compress_steps": 1, "compress_max_length": 64, "compress_lr": 1e-4, "compress_data": "instruction", "align_steps": 1, "align_lr": 5e-06, "warmup_steps": 0, "batch_size": 2,
                  "train_examples": 8, "validation_examples": 4, "validation_sts_pairs": 8, "validation_triplets": 8,
                  "seed": 0, "tasks": ["STSBenchmark"],
                  "variants": ["full (Eq. 2, sigmoid)", "JS divergence"], "temperatures": [0.05], "betas": [0.1]},
        "standard": {"profile": "standard", "backbone": "smollm2-135m", "suite": "small", "finetune": "full",
                     "compress_steps": 300, "compress_max_length": 160, "compress_lr": 1e-4, "compress_data": "instruction", "align_steps": 75, "align_lr": 5e-06,
                     "warmup_steps": 10, "batch_size": 8, "train_examples": 0, "validation_examples": 64, "validation_sts_pairs": 300,
                     "validation_triplets": 300, "seed": 0, "tasks": None,
                     "variants": ["full (Eq. 2, sigmoid)", "without compression", "log-sigmoid", "KL divergence",
                                  "JS divergence", "tanh", "reference added (official code)", "strategy 1: q as target",
                                  "strategy 2: q and d+ anchors", "strategy 3: + p(d+|e_d+) over p(d-|e_d+)",
                                  "strategy 4: + p(d-|e_d-) over p(d+|e_d-)"],
                     "temperatures": [0.02, 0.05, 0.1, 1.0], "betas": [0.05, 0.1, 0.2]},
    },
    "p3_memory": {
        "smoke": {"profile": "smoke", "backbone": "smollm2-135m", "batch_sizes": [2], "steps": 2, "max_length": 32},
        "standard": {"profile": "standard", "backbone": "smollm2-135m", "batch_sizes": [4, 8, 16], "steps": 4,
                     "max_length": 64},
    },
    "p3_summary": {  # reads the stored results of the four Paper 3 pages above, for their parameters
        "smoke": {"profile": "smoke", "tables": None, "data_efficiency": None, "ablations": None, "memory": None},
        "standard": {"profile": "standard", "tables": None, "data_efficiency": None, "ablations": None,
                     "memory": None},
    },
    "reproducibility": {
        "smoke": {"profile": "smoke"},
        "standard": {"profile": "standard"},
    },
}
PROFILES = ("smoke", "standard")


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
        f"To compute it (hours on 2 CPU cores; resumable):\n\n```bash\npython -m repro.book.build --only {name}\n```\n"
        f"\nThe smoke-profile build (`python -m repro.book.build --profile smoke`) executes this page end to end at a tiny scale.")])
    output = output_dir / f"{name}.ipynb"
    output_dir.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, output)
    return output


def page_parameters(name: str, profile: str, overrides: dict | None = None) -> dict:
    """The parameters the book runs notebook ``name`` with under ``profile``, with ``overrides`` (checked: only
    parameters the notebook has, plus ``recompute``)."""
    if name not in NOTEBOOKS:
        raise ValueError(f"unknown notebook '{name}'; valid: {', '.join(NOTEBOOKS)}")
    if profile not in PROFILES:
        raise ValueError(f"unknown profile '{profile}'; valid: {', '.join(PROFILES)}")
    if overrides is not None and not isinstance(overrides, dict):
        raise TypeError(f"overrides of '{name}' must be a dict of parameters, got {type(overrides).__name__}")
    params = dict(NOTEBOOKS[name][profile])
    unknown = set(overrides or {}) - set(params) - {"recompute"}
    if unknown:
        raise ValueError(f"notebook '{name}' has no parameter(s) {sorted(unknown)}; it has {sorted(params)}")
    return params | (overrides or {})


def execute(name: str, profile: str, overrides: dict | None = None, recompute: bool = False,
            output_dir: Path = BOOK_DIR, compute_pending: bool = False) -> Path:

    params = page_parameters(name, profile, overrides) | {"recompute": recompute}  # checks name, profile, overrides
    if profile == "standard" and name in PENDING and not compute_pending:
        return pending_page(name, PENDING[name], output_dir)
    output = output_dir / f"{name}.ipynb"
    output_dir.mkdir(parents=True, exist_ok=True)
    env_before = os.environ.get("REPRO_NOTEBOOK")
    os.environ["REPRO_NOTEBOOK"] = name
    try:
        papermill.execute_notebook(str(NOTEBOOKS_DIR / f"{name}.ipynb"), str(output), parameters=params,
                                   kernel_name="python3", cwd=str(REPO_ROOT), progress_bar=False)
    finally:
        if env_before is None:
            os.environ.pop("REPRO_NOTEBOOK", None)
    nb = nbformat.read(output, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        # the page shows the parameters it ran with (papermill's injected cell) instead of the defaults
        if "parameters" in tags and "remove-cell" not in tags and any(
                "injected-parameters" in c.metadata.get("tags", []) for c in nb.cells):
            tags.append("remove-cell")
    nbformat.write(nb, output)
    return output


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


def build_site(strict: bool = True) -> Path:
    """jupyter-book 1.x over ``book/`` with the top-level ``_config.yml`` (never the repo root)."""
    mathjax = BOOK_DIR / "_vendor" / "mathjax" / "tex-chtml.js"
    if not mathjax.is_file():
        raise FileNotFoundError(f"{mathjax} is missing: run scripts/setup.sh (it installs MathJax from npm)")
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(BOOK_DIR), "--config", str(CONFIG),
           "--path-output", str(BOOK_DIR)]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    subprocess.run(cmd, check=True, cwd=REPO_ROOT)
    return BOOK_DIR / "_build" / "html"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="standard", choices=PROFILES)
    parser.add_argument("--only", nargs="*", help="notebooks to execute (default: all)")
    parser.add_argument("-p", "--param", action="append", default=[], help="name=value override")
    parser.add_argument("--recompute", action="store_true")
    parser.add_argument("--lanes", type=int, default=1,
                        help="processes per page that split its runs (repro.store.lanes); not with --recompute")
    parser.add_argument("--no-site", action="store_true", help="execute notebooks only")
    parser.add_argument("--compute-pending", action="store_true",
                        help=f"also execute the standard pages whose results are pending ({', '.join(PENDING)})")
    args = parser.parse_args(argv)
    if args.lanes < 1 or (args.lanes > 1 and args.recompute):
        parser.error("--lanes must be >= 1, and lanes cannot share the work of --recompute (each would redo it)")
    overrides = dict(parse_override(p) for p in args.param)
    names = args.only or list(NOTEBOOKS)
    timings = {}
    for name in names:
        start = time.perf_counter()
        execute_in_lanes(name, args.profile, overrides if args.only else {}, args.lanes,
                         compute_pending=args.compute_pending or bool(args.only), recompute=args.recompute)
        timings[name] = round(time.perf_counter() - start, 1)
        print(f"executed {name} ({timings[name]} s)", flush=True)
    if not args.no_site:
        html = build_site()
        print(f"site: {html / 'index.html'}")
    print(json.dumps(timings))


if __name__ == "__main__":
    main()
