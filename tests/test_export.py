"""`repro export`: a recipe as a sentence-transformers folder gives the Embedder's embeddings."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

from tests.conftest import CORPUS

TEXTS = CORPUS + ["", "a " * 700 + "long text that the prompt-aware truncation must cut", "The end."]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def exported_equal(recipe: str, folder, texts, tokenization: str | None = None) -> np.ndarray:
    from repro.recipes.export import export
    from repro.recipes.recipe import from_recipe

    export(recipe, folder, tokenization=tokenization)
    model = SentenceTransformer(str(folder), trust_remote_code=True, device="cpu")
    ours = from_recipe(recipe, tokenization=tokenization).encode(texts)
    theirs = model.encode(texts, convert_to_numpy=True, batch_size=8)
    assert theirs.shape == ours.shape
    return cosines(ours, theirs)


@pytest.mark.parametrize("method", ["prompteol+edge/2", "echo", "mean", "last", "prompteol+whiten/2",
                                    "echo@pieces", "prompteol+edge/2@pieces"])
def test_training_free_recipes_export_to_the_same_embeddings(tiny_dir, tmp_path, method):
    method, _, tokenization = method.partition("@")
    assert exported_equal(f"{tiny_dir}/{method}", tmp_path / "out", TEXTS, tokenization or None).min() >= 0.9999
    modules = json.loads((tmp_path / "out" / "modules.json").read_text())
    assert modules[0]["type"] == "repro.recipes.export_modules.PromptedDecoder"
    about = json.loads((tmp_path / "out" / "repro_recipe.json").read_text())
    # the prompt recipes' default is the official form; the references encode with the book's pieces
    assert about["tokenization"] == (tokenization or ("pieces" if method in ("mean", "last") else "official"))
    if "+" in method:  # the filter is a plain Dense layer: identity activation (bias only for whitening's centring)
        dense = json.loads((tmp_path / "out" / "2_Dense" / "config.json").read_text())
        assert dense["activation_function"] == "torch.nn.modules.linear.Identity"
        assert dense["bias"] is method.endswith("whiten/2")


def test_a_folder_exported_before_the_library_left_the_book_still_loads(tiny_dir, tmp_path):
    """Folders exported before the user's library moved to repro.recipes name the old module in modules.json."""
    from repro.recipes.recipe import from_recipe

    recipe = f"{tiny_dir}/prompteol+edge/2"
    exported_equal(recipe, tmp_path / "out", TEXTS[:3])
    path = tmp_path / "out" / "modules.json"
    modules = json.loads(path.read_text())
    modules[0]["type"] = "repro.book.export_modules.PromptedDecoder"  # as written before the move
    path.write_text(json.dumps(modules))
    old = SentenceTransformer(str(tmp_path / "out"), trust_remote_code=True, device="cpu")
    assert cosines(from_recipe(recipe).encode(TEXTS[:3]), old.encode(TEXTS[:3])).min() >= 0.9999


@pytest.mark.parametrize("model", [1, 5, "mean"])
def test_trained_designs_export_with_lora_merged_and_their_head(tiny_dir, tmp_path, model):
    from repro.training.contrastive import TrainConfig, build_model, save_model

    config = TrainConfig(backbone=tiny_dir, model=model, max_length=512, head_latents=4, head_heads=4)
    trained = build_model(config)
    torch.manual_seed(1)
    with torch.no_grad():  # LoRA B starts at 0: make the adapter count, so that a missing merge would show
        for name, parameter in trained.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.2)
    save_model(trained, config, tmp_path / "run" / "final")
    assert exported_equal(f"run:{tmp_path / 'run'}", tmp_path / "out", TEXTS).min() >= 0.9999
    card = (tmp_path / "out" / "README.md").read_text()
    assert "trust_remote_code=True" in card and "Paper 1 model" in card
    about = json.loads((tmp_path / "out" / "repro_recipe.json").read_text())
    assert about["attention"] == ("bidirectional" if model == 5 else "causal")


def test_export_errors_are_clear(tiny_dir, tmp_path):
    from repro.recipes.export import export

    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(FileExistsError, match="not an empty folder"):
        export(f"{tiny_dir}/echo", tmp_path / "full")
    with pytest.raises(ValueError, match="unknown recipe"):
        export(f"{tiny_dir}/echoo", tmp_path / "new")
    export(f"{tiny_dir}/echo", tmp_path / "ok")
    # sentence-transformers 6 imports our module classes only with trust_remote_code=True (the card says so)
    with pytest.raises(ValueError, match="trust_remote_code"):
        SentenceTransformer(str(tmp_path / "ok"), device="cpu")


@pytest.mark.integration
@pytest.mark.parametrize("recipe", ["smollm2-135m/prompteol+edge/2", "smollm2-135m/echo", "smollm2-135m/p1-model1",
                                    "smollm2-135m/p1-model5"])
def test_book_recipes_export_equal_on_50_texts(tmp_path, monkeypatch, recipe):
    """The export's check: 50 STS-B sentences, cosine >= 0.9999 between the export and the Embedder (the trained
    recipes from the weights shipped in weights/); the model card reads the committed results (read only)."""
    from repro.core.tasks import read_tsv, task_folder
    from repro.store.paths import REPO_ROOT

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(REPO_ROOT / "results"))

    rows = read_tsv(task_folder("STSBenchmark") / "test.tsv")[:25]
    texts = [r["sentence1"] for r in rows] + [r["sentence2"] for r in rows]
    assert len(texts) == 50
    assert exported_equal(recipe, tmp_path / "out", texts).min() >= 0.9999
    from repro.recipes.recipes import recipe_scores

    card = (tmp_path / "out" / "README.md").read_text()
    stored, _ = recipe_scores(recipe, "compact")  # the card gives what the store holds, no more
    assert (f"| **all** | {len(stored)} |" in card) if len(stored) else ("No stored scores" in card)
    assert len(stored) == 19 or recipe.endswith("p1-model5")  # model 5's seed-1 run is not fully scored yet
