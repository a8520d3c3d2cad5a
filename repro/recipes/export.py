"""``repro export RECIPE FOLDER``: a recipe as a sentence-transformers folder, with a model card from the stored
results.

    repro export smollm2-135m/prompteol+edge/2 exported/prompteol-edge2
    python -c "from sentence_transformers import SentenceTransformer as S; \\
               print(S('exported/prompteol-edge2', trust_remote_code=True).encode(['a sentence']).shape)"

The folder holds the decoder (a trained recipe's LoRA merged into it), its tokenizer, and the modules:

* :class:`repro.recipes.export_modules.PromptedDecoder`: the prompt, the book's tokenization, the attention mode;
* sentence-transformers' ``Pooling`` (``lasttoken`` or ``mean``) or, for a trainable-pooling design,
  :class:`repro.recipes.export_modules.PoolingHead`;
* ``Normalize`` for trained models (they are trained on cosine similarity and return unit vectors);
* an EmbedFilter (or any linear filter) map as a plain ``Dense`` layer: identity activation, no bias (whitening's
  centring becomes its bias).

Loading needs this package installed. sentence-transformers 6 imports a module class from outside its own package
only with ``trust_remote_code=True`` (``util.misc.import_module_class``), even a class of an installed package and
even from a local folder; the folder holds no code, so the flag admits the installed ``repro`` modules only.
"""

from __future__ import annotations

import argparse
import json
import shutil
from importlib import metadata
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Dense, Normalize
from sentence_transformers.sentence_transformer.modules import Pooling
from torch import nn

from repro.core.backbones import resolve
from repro.core.embedder import CachedEmbedder, Embedder, MappedEmbedder, StatesEmbedder
from repro.core.prompts import get_prompt
from repro.core.suites import describe_suite
from repro.recipes.export_modules import PoolingHead, PromptedDecoder
from repro.recipes.recipe import EVAL_MAX_LENGTH, from_recipe
from repro.recipes.recipes import add_tokenization_argument, recipe_scores
from repro.store.atomic import atomic_dir
from repro.training.contrastive import TrainedEmbedder

POOLING_MODES = {"last": "lasttoken", "mean": "mean", "eos": "lasttoken"}
CARD_SUITE = "compact"


def _states_modules(embedder: StatesEmbedder) -> tuple[list[nn.Module], dict]:
    backbone, config = embedder.backbone, embedder.config
    if embedder.layer != backbone.num_layers:
        raise ValueError(f"only final-layer recipes export (this one pools layer {embedder.layer})")
    decoder = PromptedDecoder(resolve(backbone.name)[0], prompt=config.prompt, max_length=config.max_length,
                              truncation=config.truncation, attention=backbone.attention,
                              tokenization=config.tokenization)
    pooling = Pooling(backbone.hidden_size, POOLING_MODES[embedder.pooling])
    about = {"backbone": backbone.name, "prompt": config.prompt, "pooling": embedder.pooling,
             "attention": backbone.attention, "max_length": config.max_length, "truncation": config.truncation,
             "tokenization": config.tokenization, "trained": False}
    return [decoder, pooling], about


def _trained_modules(embedder: TrainedEmbedder, scratch: Path) -> tuple[list[nn.Module], dict]:
    model, config = embedder.model, embedder.config
    spec, backbone = model.spec, model.backbone
    merged = backbone.model.merge_and_unload()  # LoRA folded into the weights (this embedder is not used again)
    merged.get_decoder().save_pretrained(str(scratch))
    backbone.tokenizer.save_pretrained(str(scratch))
    decoder = PromptedDecoder(str(scratch), prompt=config.prompt, max_length=config.max_length,
                              attention=spec.attention, all_layers=spec.multi_layer)
    if model.head is None:
        modules = [decoder, Pooling(backbone.hidden_size, POOLING_MODES[spec.head_input]), Normalize()]
    else:
        head = PoolingHead(spec.head_input, backbone.hidden_size, backbone.num_layers if spec.multi_layer else None,
                           latents=config.head_latents, heads=config.head_heads)
        head.head.load_state_dict(model.head.state_dict())
        modules = [decoder, head]
    about = {"backbone": config.backbone, "prompt": config.prompt, "pooling": spec.name, "attention": spec.attention,
             "max_length": config.max_length, "truncation": "head", "tokenization": "pieces", "trained": True,
             "model": config.model, "seed": config.seed, "weights_digest": embedder.digest}
    return modules, about


def _dense(transform, width: int) -> Dense:
    matrix = torch.as_tensor(transform.matrix, dtype=torch.float32)
    offset = getattr(transform, "offset", None)
    bias = None if offset is None else -(torch.as_tensor(offset, dtype=torch.float32) @ matrix)
    if matrix.shape[0] != width:
        raise ValueError(f"filter {transform.name} maps width {matrix.shape[0]}, the embeddings have {width}")
    return Dense(matrix.shape[0], matrix.shape[1], bias=bias is not None, activation_function=nn.Identity(),
                 init_weight=matrix.T.contiguous(), init_bias=bias)


def st_modules(embedder: Embedder, scratch: Path) -> tuple[list[nn.Module], dict]:
    """The sentence-transformers modules that compute ``embedder`` (a trained model's merged decoder is written to
    ``scratch``) and a description of what they compute."""
    inner, transform = (embedder.inner, embedder.transform) if isinstance(embedder, MappedEmbedder) else (embedder, None)
    if isinstance(inner, CachedEmbedder):  # a cache of the trained model's outputs: export the model
        inner = inner.inner
    if isinstance(inner, StatesEmbedder):
        modules, about = _states_modules(inner)
    elif isinstance(inner, TrainedEmbedder):
        modules, about = _trained_modules(inner, scratch)
    else:
        raise ValueError(f"{type(inner).__name__} recipes do not export: only the training-free recipes and the "
                         "Paper 1 designs and contrastive baselines (AutoRegEmbed's compression encoder reads "
                         "appended compression tokens, which needs a module of its own)")
    about["filter"] = None
    if transform is not None:
        if not hasattr(transform, "matrix"):
            raise ValueError(f"filter {getattr(embedder, 'name', '?')} is not a linear map: it does not export")
        modules.append(_dense(transform, inner.dim))
        about["filter"] = embedder.name
    about["dims"] = embedder.dim
    return modules, about


def export(recipe: str, folder: str | Path, progress: bool = False, tokenization: str | None = None) -> Path:
    """Write ``recipe`` as a sentence-transformers folder (atomically; an existing non-empty folder is an error).
    ``tokenization``: a training-free prompt recipe's form (:func:`repro.recipes.recipes.recipe_tokenization`)."""
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise FileExistsError(f"{folder} exists and is not an empty folder: choose a new one")
    embedder = from_recipe(recipe, progress, tokenization=tokenization)
    with atomic_dir(folder) as tmp:
        modules, about = st_modules(embedder, tmp / "_decoder")
        model = SentenceTransformer(modules=modules, device="cpu")
        model.save(str(tmp), create_model_card=False)
        shutil.rmtree(tmp / "_decoder", ignore_errors=True)
        about |= {"recipe": recipe, "identity": embedder.identity, "repro_version": metadata.version("repro")}
        (tmp / "repro_recipe.json").write_text(json.dumps(about, indent=2, sort_keys=True))
        (tmp / "README.md").write_text(model_card(recipe, about))
    return folder


def model_card(recipe: str, about: dict) -> str:
    """A model card (README.md) from the stored results: scores per category, suite and caps, scale, the page."""
    scores, source = recipe_scores(recipe, CARD_SUITE, about.get("tokenization"))
    prompt = get_prompt(about["prompt"])
    lines = [f"# {recipe}", "",
             f"An embedding recipe of the replication book, exported by `repro export` (repro "
             f"{about.get('repro_version', '?')}).", "",
             "## Use", "", "```python", "from sentence_transformers import SentenceTransformer",
             "model = SentenceTransformer(\"path/to/this/folder\", trust_remote_code=True)",
             "vectors = model.encode([\"a sentence\", \"another one\"])", "```", "",
             "Install the `repro` package first (`pip install -e .` in the book's repository): the folder names its "
             "module classes (`repro.recipes.export_modules`). sentence-transformers 6 imports a module class from outside "
             "its own package only with `trust_remote_code=True`; the folder holds no code.", "",
             "## What it computes", "",
             f"- backbone: `{about['backbone']}`, {about['attention']} attention, fp32 weights",
             f"- input: prompt `{prompt.name}` = `{prompt.template}`" + (" + EOS" if prompt.append_eos else "")
             + f", text truncated ({about['truncation']}) to fit {about['max_length']} tokens (the prompt is never cut), "
             f"{about.get('tokenization', 'pieces')} tokenization",
             f"- pooling: {about['pooling']}", f"- filter: {about['filter'] or 'none'}",
             f"- dimensions: {about['dims']}"]
    if about.get("trained"):
        lines.append(f"- trained: Paper 1 model {about['model']}, seed {about['seed']}, under the book's budget rule "
                     f"(weights digest `{about['weights_digest']}`)")
    caps = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in describe_suite(CARD_SUITE).items()
                     if k != "suite" and v is not None)
    lines += ["", f"## Scores (suite `{CARD_SUITE}`; caps: {caps})", ""]
    if scores.empty:
        lines.append(f"No stored scores on `{CARD_SUITE}`: `repro evaluate --recipe {recipe} --suite {CARD_SUITE}` "
                     "computes and stores them.")
    else:
        table = scores.groupby("category")["score"].agg(["mean", "size"])
        lines += ["| category | tasks | mean x100 |", "|---|---|---|"]
        lines += [f"| {cat} | {int(row['size'])} | {row['mean']:.2f} |" for cat, row in table.iterrows()]
        lines += [f"| **all** | {len(scores)} | {scores['score'].mean():.2f} |", "",
                  f"Source: {source}. Every task's main score, mean over its evaluation units; "
                  "the book's leaderboard page compares this recipe with the others on the same tasks."]
    lines += ["", "## Scale", "",
              "Scored on CPU in fp32 with the book's harness (mteb evaluators) at the suite's caps, not the full MTEB "
              "test sets; trained recipes were trained at the book's scale (batch 16, at most 600 steps, STS-B dev "
              "stopping), far below the papers' budgets. See the book's pages for every deviation.", ""]
    if about.get("trained"):
        lines += [f"Trained models embed at max length {EVAL_MAX_LENGTH} (as scored), trained at 64.", ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Export a recipe as a sentence-transformers folder (repro recipes).")
    parser.add_argument("recipe", help="'<backbone>/<method>[+<filter>]', e.g. smollm2-135m/prompteol+edge/2")
    parser.add_argument("folder", help="a new folder")
    add_tokenization_argument(parser)
    args = parser.parse_args(argv)
    try:
        folder = export(args.recipe, args.folder, progress=True, tokenization=args.tokenization)
    except (ValueError, FileNotFoundError, FileExistsError, TypeError) as error:
        raise SystemExit(f"repro export: {error}") from None
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    print(f"{folder}: {size / 1e6:.0f} MB; load with SentenceTransformer('{folder}', trust_remote_code=True)")


if __name__ == "__main__":
    main()
