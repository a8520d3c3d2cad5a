"""Named recipes: the book's configurations as one-line Embedders, for encoding your own texts.

    from repro import from_recipe
    embedder = from_recipe("qwen2.5-coder-0.5b/echo+edge/2")           # an Embedder
    vectors = embedder.encode(["a sentence", "another one"])        # float32 [2, 448]

A recipe id is ``<backbone>/<method>[+<filter>]``, the same names the result keys use:

* ``<backbone>``: a packaged short name (``smollm2-135m``, ``gemma3-270m``, ``qwen2.5-coder-0.5b``), a local model
  folder or a Hugging Face id (``Qwen/Qwen2.5-0.5B``: needs a network);
* ``<method>``: ``prompteol``, ``prompteol-summarize`` or ``echo`` (the EmbedFilter pages' final-layer
  embeddings: PromptEOL's last token, Echo's second-copy mean), or ``last`` / ``mean`` (the untrained final
  layer, no prompt: Paper 3's references);
* ``+<filter>``: an EmbedFilter variant of the filter-type pages (``edge/2``, ``edge/4``, ``head/2``,
  ``truncate/2``, ``randproj/2``, ``whiten/2``...), applied to the cached states.

The training-free prompt recipes (PromptEOL, Echo, with any filter) encode with EmbedFilter's official one-call
tokenization (:data:`DEFAULT_TOKENIZATION`; Paper 2's pages, 0.9 points above the book's earlier piece-wise form on
the full STS-B test); ``tokenization="pieces"`` chooses the earlier form, whose stored scores stay under their keys.
The other recipes encode in the one form they were trained or scored with.

Trained runs are recipes too:

* ``<backbone>/p1-model1`` and ``<backbone>/p1-model5``: Paper 1's models 1 and 5 trained under the budget rule,
  from the weights shipped in ``weights/`` (:mod:`repro.recipes.shipped`: float16 copies of one seed's run), with
  an optional ``+<filter>`` too (the EmbedFilter map applied to the trained model's embeddings);
* ``run:<folder>`` loads any run folder of the run store (a Paper 1 design or a contrastive baseline, or an
  AutoRegEmbed stage).

Trained models embed at the evaluation's max length (512 tokens), as their stored scores were computed.
:func:`recipes_table` lists the recipes with their stored scores (``repro recipes``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from repro.autoregembed.experiments.baselines import stored_untrained
from repro.autoregembed.experiments.scores import autoreg_embedder_from
from repro.core.backbones import PACKAGED, load_backbone, resolve
from repro.core.distributed import init_from_env, world
from repro.core.embedder import CachedEmbedder, Embedder, MappedEmbedder, StatesEmbedder
from repro.core.encode import TOKENIZATIONS, EncodeConfig
from repro.core.scoring import evaluate_per_task, records_frame, stored_per_task
from repro.core.tasks import TASKS
from repro.embedfilter.filters import parse_variant
from repro.embedfilter.sweep import PROMPT_POOLING, encode_config, filters_for, stored_scores
from repro.pooling_attention.converged import converged_scores
from repro.recipes.shipped import TRAINED_RECIPES, shipped_folder, weights_dir
from repro.recipes.shipped import source as shipped_source
from repro.store.atomic import write_npy
from repro.store.fingerprint import weights_digest
from repro.training.contrastive import TrainedEmbedder, load_trained

UNTRAINED = {"last": ("none-noeos", "last"), "mean": ("none-noeos", "mean")}
METHODS = (*PROMPT_POOLING, *UNTRAINED, *TRAINED_RECIPES)
EVAL_MAX_LENGTH = 512  # trained models are scored at this max length (repro.training.evaluation)
DEFAULT_TOKENIZATION = "official"  # the training-free prompt recipes' form (repro.core.tokenization)
ONE_FORM = "pieces"  # the form of every other recipe (the untrained references, the trained designs)


def parse_recipe(recipe: str) -> tuple[str, str, str | None]:
    """``"<backbone>/<method>[+<filter>]"`` -> (backbone, method, filter or None), checked."""
    if not isinstance(recipe, str):
        raise TypeError(f"a recipe is a string like 'smollm2-135m/prompteol+edge/2', got {type(recipe).__name__}")
    head, plus, variant = recipe.partition("+")
    backbone, slash, method = head.rpartition("/")
    if not slash or not backbone or method not in METHODS or (plus and not variant):
        raise ValueError(f"unknown recipe {recipe!r}: write '<backbone>/<method>[+<filter>]' with a method of "
                         f"{', '.join(METHODS)}, e.g. 'qwen2.5-coder-0.5b/echo+edge/2' (`repro recipes` lists "
                         "the recipes with stored scores)")
    if variant:
        parse_variant(variant)  # a clear error for an unknown filter
    return backbone, method, variant or None


def recipe_tokenization(recipe: str, tokenization: str | None = None) -> str:
    """The tokenization ``recipe`` encodes with: a training-free prompt recipe's ``tokenization`` (default
    :data:`DEFAULT_TOKENIZATION`); every other recipe's one form (:data:`ONE_FORM`), which it alone accepts."""
    if tokenization is not None and tokenization not in TOKENIZATIONS:
        raise ValueError(f"unknown tokenization {tokenization!r}; valid: {', '.join(TOKENIZATIONS)}")
    prompt = not recipe.startswith("run:") and parse_recipe(recipe)[1] in PROMPT_POOLING
    if prompt:
        return tokenization or DEFAULT_TOKENIZATION
    if tokenization not in (None, ONE_FORM):
        raise ValueError(f"{recipe}: the {tokenization} tokenization is EmbedFilter's, for the prompt recipes "
                         f"({', '.join(PROMPT_POOLING)}); this recipe encodes as it was trained or scored ({ONE_FORM})")
    return ONE_FORM


def from_recipe(recipe: str, progress: bool = False, tokenization: str | None = None) -> Embedder:
    """The Embedder of a recipe id (module docstring); ``run:<folder>`` loads a trained run. ``tokenization``:
    a training-free prompt recipe's form, "official" (default) or "pieces" (:func:`recipe_tokenization`)."""
    if isinstance(recipe, str) and recipe.startswith("run:"):
        recipe_tokenization(recipe, tokenization)
        return _trained(Path(recipe[4:]).expanduser())
    backbone_name, method, variant = parse_recipe(recipe)
    tokenization = recipe_tokenization(recipe, tokenization)
    if method in TRAINED_RECIPES:
        if variant and variant.startswith("whiten"):
            raise ValueError(f"{recipe}: whitening is fitted on untrained states; a trained recipe takes the "
                             "linear filters only (edge/2, head/2, truncate/2, randproj/2, ...)")
        trained = _trained(shipped_folder(backbone_name, method))
        trained = CachedEmbedder(trained, json.dumps([trained.config.identity(), trained.config.max_length,
                                                      trained.digest]))
        if variant is None or variant == "raw":
            return trained
        config = EncodeConfig(prompt=trained.config.prompt, poolings=("last",), max_length=EVAL_MAX_LENGTH)
        transform = filters_for(trained.model.backbone, config, [variant], progress=progress)[variant]
        return MappedEmbedder(trained, transform, variant)
    backbone = load_backbone(backbone_name)
    if method in UNTRAINED:
        prompt, pooling = UNTRAINED[method]
        config = EncodeConfig(prompt=prompt, poolings=(pooling,), max_length=512, layers=(backbone.num_layers,))
    else:
        config, pooling = encode_config(backbone, method, tokenization=tokenization), PROMPT_POOLING[method]
    states = StatesEmbedder(backbone, config, pooling, progress=progress)
    if variant is None or variant == "raw":
        return states
    transform = filters_for(backbone, config, [variant], progress=progress)[variant]
    return MappedEmbedder(states, transform, variant)


def _trained(folder: Path) -> Embedder:
    final = folder / "final" if (folder / "final").is_dir() else folder
    if (final / "train_config.json").is_file():  # a Paper 1 design or a contrastive baseline
        model, config = load_trained(final)
        return TrainedEmbedder(model, config, max_length=EVAL_MAX_LENGTH, digest=weights_digest(model))
    config_file = final / "config.json"
    if config_file.is_file() and "stage" in json.loads(config_file.read_text()):  # an AutoRegEmbed stage
        return autoreg_embedder_from(final)
    raise FileNotFoundError(f"{final} is not a trained run of the run store (no train_config.json or AutoRegEmbed "
                            "config.json); run folders live under runs/ (REPRO_RUNS_DIR)")


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
