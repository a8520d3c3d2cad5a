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
:func:`repro.recipes.recipes.recipes_table` lists the recipes with their stored scores (``repro recipes``).

This module imports only what a training-free recipe needs (the encoder, the EmbedFilter maps): a trained recipe's
loaders (Paper 1's trainer, AutoRegEmbed's encoder, the shipped weights) are imported when one is built, so that
``from repro import from_recipe`` stays light (tested in ``tests/test_layout.py``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from repro.core.backbones import load_backbone
from repro.core.embedder import CachedEmbedder, Embedder, MappedEmbedder, StatesEmbedder
from repro.core.encode import TOKENIZATIONS, EncodeConfig
from repro.embedfilter.filters import PROMPT_POOLING, encode_config, filters_for, parse_variant
from repro.store.fingerprint import weights_digest
from repro.store.paths import REPO_ROOT

WEIGHTS_ENV = "REPRO_WEIGHTS_DIR"  # where the trained recipes' shipped weights are (repro.recipes.shipped writes them)
TRAINED_RECIPES = {"p1-model1": 1, "p1-model5": 5}  # recipe method -> Paper 1 design (under the budget rule)
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


def weights_dir() -> Path:
    return Path(os.environ.get(WEIGHTS_ENV, REPO_ROOT / "weights")).expanduser()


def shipped_folder(backbone: str, method: str) -> Path:
    """The shipped weights of ``<backbone>/<method>`` (a run folder's ``final/`` layout, float16)."""
    if method not in TRAINED_RECIPES:
        raise ValueError(f"unknown trained recipe '{method}'; valid: {', '.join(TRAINED_RECIPES)}")
    folder = weights_dir() / f"{backbone}-{method}"
    if not (folder / "train_config.json").is_file():
        raise FileNotFoundError(
            f"no shipped weights for '{backbone}/{method}' in {weights_dir()}: train the run "
            f"(python -m repro.pooling_attention.trained --converged --backbone {backbone} --model "
            f"{TRAINED_RECIPES[method]} --seed S), then ship it (python -m repro.recipes.shipped {backbone} {method} "
            f"--seed S), or load the run folder directly ('run:<folder>')")
    return folder


def _trained(folder: Path) -> Embedder:
    # a trained run's loaders, imported when one is built (the front door stays light)
    from repro.autoregembed.experiments.scores import autoreg_embedder_from
    from repro.training.contrastive import TrainedEmbedder, load_trained

    final = folder / "final" if (folder / "final").is_dir() else folder
    if (final / "train_config.json").is_file():  # a Paper 1 design or a contrastive baseline
        model, config = load_trained(final)
        return TrainedEmbedder(model, config, max_length=EVAL_MAX_LENGTH, digest=weights_digest(model))
    config_file = final / "config.json"
    if config_file.is_file() and "stage" in json.loads(config_file.read_text()):  # an AutoRegEmbed stage
        return autoreg_embedder_from(final)
    raise FileNotFoundError(f"{final} is not a trained run of the run store (no train_config.json or AutoRegEmbed "
                            "config.json); run folders live under runs/ (REPRO_RUNS_DIR)")
