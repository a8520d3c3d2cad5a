"""What the named recipes score and the commands around them: the stored scores of a recipe (``recipe_scores``),
the table of recipes (``repro recipes``), encoding a file (``repro encode``) and scoring a recipe (``repro evaluate``).
Building a recipe is :mod:`repro.recipes.recipe` (``from repro import from_recipe``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from repro.autoregembed.experiments.baselines import stored_untrained
from repro.core.backbones import PACKAGED, resolve
from repro.core.distributed import init_from_env, world
from repro.core.embedder import Embedder
from repro.core.encode import TOKENIZATIONS
from repro.core.scoring import evaluate_per_task, records_frame, stored_per_task
from repro.core.tasks import TASKS
from repro.embedfilter.sweep import PROMPT_POOLING, stored_scores
from repro.pooling_attention.converged import converged_scores
from repro.recipes.recipe import (
    DEFAULT_TOKENIZATION,
    ONE_FORM,
    TRAINED_RECIPES,
    UNTRAINED,
    from_recipe,
    parse_recipe,
    recipe_tokenization,
    weights_dir,
)
from repro.recipes.shipped import source as shipped_source
from repro.store.atomic import write_npy


def stored_recipes(suite: str = "compact") -> list[str]:
    """The training-free recipe ids with stored scores on ``suite``."""
    table = recipes_table(suite)
    return list(table.index) if len(table) else []


def recipes_table(suite: str = "compact") -> pd.DataFrame:
    """The recipes with stored scores on ``suite``: the training-free ones of the EmbedFilter pages (under the form
    they encode with by default, :data:`DEFAULT_TOKENIZATION`) and the trained ones with shipped weights (the
    converged run's scores); tasks scored, mean x100 over them, embedding dimensions, the tokenization, the page
    that shows them."""
    columns = ["tasks", "mean", "dims", "tokenization", "suite", "page"]
    rows = {}
    for folder in sorted(weights_dir().glob("*/source.json")):
        recipe = json.loads(folder.read_text())["recipe"]
        backbone = parse_recipe(recipe)[0]
        scores, _ = recipe_scores(recipe, suite)
        if len(scores):
            hidden = json.loads((Path(resolve(backbone)[0]) / "config.json").read_text())["hidden_size"]
            rows[recipe] = {"tasks": len(scores), "mean": scores["score"].mean(), "dims": int(hidden),
                            "tokenization": ONE_FORM, "suite": suite, "page": "p1_converged"}
    scores = stored_scores(suite, tokenization=DEFAULT_TOKENIZATION)
    if scores.empty:
        return pd.DataFrame.from_dict(rows, orient="index", columns=columns)
    per_task = scores.groupby(["backbone", "prompt", "variant", "task"], as_index=False).agg(
        score=("main_score", "mean"), dims=("dims", "first"))
    for (backbone, prompt, variant), part in per_task.groupby(["backbone", "prompt", "variant"]):
        recipe = f"{backbone}/{prompt}" + ("" if variant == "raw" else f"+{variant}")
        rows[recipe] = {"tasks": len(part), "mean": 100 * part["score"].mean(), "dims": int(part["dims"].iloc[0]),
                        "tokenization": DEFAULT_TOKENIZATION, "suite": suite, "page": "p2_main_table"}
    return pd.DataFrame.from_dict(rows, orient="index")[columns].sort_values(["tasks", "mean"], ascending=False)


def sweep_command(recipe: str, suite: str = "compact", tokenization: str = DEFAULT_TOKENIZATION) -> str:
    """The EmbedFilter sweep that stores a training-free recipe's scores under ``tokenization``."""
    backbone, method, _ = parse_recipe(recipe)
    return f"repro embedfilter --backbone {backbone} --prompt {method} --suite {suite} --tokenization {tokenization}"


def recipe_scores(recipe: str, suite: str = "compact", tokenization: str | None = None) -> tuple[pd.DataFrame, str]:
    """The stored per-task scores of a recipe (columns task, category, score x100; read only) and where they come
    from: the EmbedFilter sweeps (PromptEOL, Echo, any filter; under ``tokenization``, the recipe's own form unless
    given: :func:`recipe_tokenization`), the untrained references (last, mean), the shipped seed's converged Paper 1
    run (p1-model1, p1-model5), else ``repro evaluate --recipe`` (``recipe_scores``)."""
    tokenization = recipe_tokenization(recipe, tokenization)
    columns = ["task", "category", "score"]
    source = f"results/{RECIPE_SCORES} (repro evaluate --recipe)"
    frame = pd.DataFrame(columns=columns)
    if not recipe.startswith("run:"):
        backbone, method, variant = parse_recipe(recipe)
        if method in PROMPT_POOLING:
            scores = stored_scores(suite, tokenization=tokenization)
            if len(scores):
                part = scores[(scores.backbone == backbone) & (scores.prompt == method)
                              & (scores.variant == (variant or "raw"))]
                per_task = part.groupby("task")["main_score"].mean() * 100
                frame = pd.DataFrame({"task": per_task.index, "score": per_task.values})
                source = f"results/embedfilter (the EmbedFilter sweeps, {tokenization} tokenization)"
        elif method in UNTRAINED and variant is None:
            label = {"last": "last token", "mean": "mean"}[method]
            frame = records_frame(label, stored_untrained(backbone, suite)[label])[["task", "score"]]
            source = "results/autoreg_untrained (Paper 3's untrained references)"
        elif method in TRAINED_RECIPES and variant is None:
            seed = shipped_source(backbone, method)["seed"]
            scores, _ = converged_scores(backbone, [TRAINED_RECIPES[method]], seeds=[seed], suite=suite)
            frame = scores[["task", "score"]]
            source = f"results/trained_scores (the converged run, seed {seed}; the fp32 weights before shipping)"
    if frame.empty:
        evaluated = evaluated_scores(recipe, suite, tokenization)
        if evaluated.empty and not recipe.startswith("run:") and parse_recipe(recipe)[1] in PROMPT_POOLING:
            source = f"not stored: {sweep_command(recipe, suite, tokenization)}, or repro evaluate --recipe {recipe}"
        return evaluated, source
    frame = frame.assign(category=[TASKS[t].category for t in frame["task"]])[columns]
    return frame.reset_index(drop=True), source


def evaluated_params(recipe: str, tokenization: str | None = None) -> dict:
    """The key of a recipe's ``repro evaluate`` scores: the recipe id, and its tokenization where it is not the one
    form every score stored before the option had (so those keep their keys)."""
    tokenization = recipe_tokenization(recipe, tokenization)
    return {"recipe": recipe} | ({} if tokenization == ONE_FORM else {"tokenization": tokenization})


def evaluated_scores(recipe: str, suite: str = "compact", tokenization: str | None = None) -> pd.DataFrame:
    """The scores ``repro evaluate --recipe`` stored for ``recipe`` under ``tokenization`` (the recipe's own form
    unless given; task, category, score x100; read only): one set of weights, whatever the recipe."""
    found = stored_per_task(RECIPE_SCORES, evaluated_params(recipe, tokenization), suite, list(TASKS))
    return records_frame(recipe, found)[["task", "category", "score"]]


INPUT_SUFFIXES = (".txt", ".jsonl")


def read_texts(path: str | Path, field: str = "text") -> list[str]:
    """The texts of a file, one row per line: every line of a ``.txt`` (a blank line is an empty text, encoded like
    any other, so row i of the output is line i of the input), or the ``field`` of each JSON line of a ``.jsonl``
    (a blank line there is an error naming it). A missing file, an unknown suffix, an empty file, a line that is
    not UTF-8 or a JSON line without ``field`` is a clear error naming the line."""
    path = Path(path)
    if path.suffix not in INPUT_SUFFIXES:
        raise ValueError(f"{path}: input files are {' or '.join(INPUT_SUFFIXES)}, got '{path.suffix or 'no suffix'}'")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    lines = []
    for number, raw in enumerate(path.read_bytes().splitlines(), 1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise ValueError(f"{path}, line {number}: not UTF-8 (byte 0x{raw[error.start]:02x} at column "
                             f"{error.start + 1}); convert the file, e.g. iconv -f latin1 -t utf-8") from None
    if not any(line.strip() for line in lines):
        raise ValueError(f"{path} is empty: nothing to encode")
    if path.suffix == ".txt":
        return lines
    texts = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            raise ValueError(f"{path}, line {number} is blank: each .jsonl line is one JSON object (one output row)")
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}, line {number}: not JSON ({error.msg})") from None
        if not isinstance(item, dict) or not isinstance(item.get(field), str):
            raise ValueError(f"{path}, line {number}: a JSON object with a string '{field}' expected")
        texts.append(item[field])
    return texts


def encode_file(recipe: str, source: str | Path, output: str | Path, field: str = "text",
                progress: bool = True, tokenization: str | None = None) -> np.ndarray:
    """Encode every text of ``source`` with ``recipe`` and save the float32 ``[n, d]`` array to ``output``
    (``.npy``, written atomically). Resumable: the states cache keeps every finished chunk. Under ``torchrun``
    (:mod:`repro.core.distributed`) the ranks share the chunks still to encode and rank 0 writes ``output``."""
    output = Path(output)
    if output.suffix != ".npy":
        raise ValueError(f"{output}: the output is a .npy file")
    if not (isinstance(recipe, str) and recipe.startswith("run:")):
        parse_recipe(recipe)  # a clear error before the file is read or anything loads
    recipe_tokenization(recipe, tokenization)
    texts = read_texts(source, field)
    rank, _ = init_from_env()
    vectors = from_recipe(recipe, progress=progress, tokenization=tokenization).encode(texts)
    if rank == 0:
        output.parent.mkdir(parents=True, exist_ok=True)
        write_npy(output, vectors)
    return vectors


def encode_main(argv=None):
    parser = argparse.ArgumentParser(description="Encode a file of texts with a named recipe (repro recipes); "
                                                 "torchrun --nproc-per-node N -m repro encode ... runs N processes.")
    parser.add_argument("--recipe", required=True, help="'<backbone>/<method>[+<filter>]' or 'run:<folder>'")
    parser.add_argument("--input", required=True, help="a .txt file (one text per line; a blank line is an empty "
                        "text, so row i of the output is line i) or .jsonl (--field; one JSON object per line)")
    parser.add_argument("--output", required=True, help="the .npy file to write")
    parser.add_argument("--field", default="text", help="the JSON key of each .jsonl line (default: text)")
    add_tokenization_argument(parser)
    args = parser.parse_args(argv)
    try:
        vectors = encode_file(args.recipe, args.input, args.output, args.field, tokenization=args.tokenization)
    except (ValueError, FileNotFoundError, TypeError) as error:
        raise SystemExit(f"repro encode: {error}") from None
    rank, size = world()
    if rank == 0:
        print(f"{args.output}: {vectors.shape[0]} x {vectors.shape[1]} float32" + (f" ({size} processes)" if size > 1
                                                                                   else ""))


RECIPE_SCORES = "recipe_scores"


def add_tokenization_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tokenization", choices=TOKENIZATIONS, help=f"a prompt recipe's form (default "
                        f"{DEFAULT_TOKENIZATION}: EmbedFilter's one-call tokenization; pieces: the book's earlier form)")


def weights_id(embedder: Embedder) -> str:
    """What identifies an Embedder's weights: a trained model's weights digest, else the backbone's identity (name,
    revision, attention), looked up through wrappers (``inner``)."""
    while True:
        if getattr(embedder, "digest", ""):
            return embedder.digest
        if hasattr(embedder, "backbone"):
            return embedder.backbone.identity
        if not hasattr(embedder, "inner"):
            raise ValueError(f"{embedder!r} names no weights (no digest, backbone or inner embedder)")
        embedder = embedder.inner


def evaluate_recipe(recipe: str, suite: str = "compact", tasks=None, recompute: bool = False,
                    progress: bool = True, tokenization: str | None = None) -> pd.DataFrame:
    """mteb scores of a recipe on ``suite`` (every task, or ``tasks``), stored per task in
    ``results/recipe_scores/`` under the recipe id and its tokenization (:func:`evaluated_params`; a trained run:
    its folder's weights digest is stored with each score, and scores of two different weights are never mixed)."""
    if not (isinstance(recipe, str) and recipe.startswith("run:")):
        parse_recipe(recipe)  # a clear error before anything loads
    params = evaluated_params(recipe, tokenization)

    def make_embedder():
        embedder = from_recipe(recipe, progress, tokenization=tokenization)
        return embedder, weights_id(embedder)

    frame = evaluate_per_task(RECIPE_SCORES, params, suite, tasks, make_embedder, progress, recompute, label=recipe)
    return frame.assign(recipe=recipe)


def evaluate_main(argv=None):
    """``repro evaluate --recipe R [--suite S] [--tasks ...]`` (the harness check is its own command,
    ``repro harness``: :mod:`repro.core.reference`)."""
    argv = list(argv or [])
    if "--recipe" not in argv and not {"-h", "--help"} & set(argv):
        raise SystemExit("repro evaluate: --recipe is required (a recipe id, e.g. smollm2-135m/prompteol+edge/2); "
                         "the harness check against MTEB's published MiniLM scores is `repro harness`")
    parser = argparse.ArgumentParser(prog="repro evaluate", description="Score a named recipe on a suite (mteb's "
                                     "evaluators; each task's score stored in results/recipe_scores/).")
    parser.add_argument("--recipe", required=True, help="<backbone>/<method>[+<filter>] or run:<run folder>")
    parser.add_argument("--suite", default="compact")
    parser.add_argument("--tasks", nargs="*")
    parser.add_argument("--recompute", action="store_true")
    add_tokenization_argument(parser)
    args = parser.parse_args(argv)
    try:
        frame = evaluate_recipe(args.recipe, args.suite, args.tasks, args.recompute, tokenization=args.tokenization)
    except (ValueError, FileNotFoundError, TypeError) as error:
        raise SystemExit(f"repro evaluate: {error}") from None
    table = frame.groupby(["category", "task"])["main_score"].mean().mul(100).round(2)
    print(table.to_string())
    print(f"mean over {len(table)} tasks: {table.mean():.2f} (x100; suite '{args.suite}', "
          f"{recipe_tokenization(args.recipe, args.tokenization)} tokenization, stored in results/{RECIPE_SCORES}/)")


def main(argv=None):
    parser = argparse.ArgumentParser(description="List the named recipes with their stored scores.")
    parser.add_argument("--suite", default="compact")
    parser.add_argument("--backbone", choices=sorted(PACKAGED), help="only this backbone's recipes")
    args = parser.parse_args(argv)
    table = recipes_table(args.suite)
    if args.backbone:
        table = table[table.index.str.startswith(args.backbone + "/")]
    print(table.round(2).to_string() if len(table) else f"no recipe has stored scores on '{args.suite}'")
    print("\nrepro.from_recipe('<backbone>/<method>[+<filter>]'), or 'run:<run folder>' for a trained run")
