"""One Embedder for every model: shape, dtype, identity, bad input; one mteb adapter; the one weights digest."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pandas as pd
import pytest

from repro.core.embedder import Embedder, MappedEmbedder, StatesEmbedder
from repro.core.encode import EncodeConfig, encode
from repro.core.evaluate import MtebEncoder, run_mteb, states_encoder
from repro.core.tasks import offline_task
from repro.store.fingerprint import weights_digest

TEXTS = ["A man is playing a guitar.", "Rain is expected tomorrow.", "The cat sat on the mat."]


class Scaled:
    dims = 3

    def __call__(self, states):
        return states[:, :3] * 2


def test_states_embedder_returns_float32_rows_in_order_and_refuses_a_bare_string(tiny):
    config = EncodeConfig(poolings=("last", "mean"), max_length=32)
    embedder = StatesEmbedder(tiny, config, "mean")
    out = embedder.encode(TEXTS)
    assert out.shape == (3, tiny.hidden_size) and out.dtype == np.float32 and embedder.dim == tiny.hidden_size
    np.testing.assert_array_equal(embedder.encode(TEXTS[::-1]), out[::-1])
    np.testing.assert_array_equal(out, encode(tiny, TEXTS, config, progress=False)["mean"][-1])
    assert embedder.encode([]).shape == (0, tiny.hidden_size)
    for bad in ("one text", b"bytes", 3):
        with pytest.raises(TypeError, match="list of strings"):
            embedder.encode(bad)
        with pytest.raises(TypeError, match="list of strings"):
            encode(tiny, bad, config, progress=False)
    with pytest.raises(TypeError, match="must be str"):
        embedder.encode(["ok", None])
    with pytest.raises(ValueError, match="unknown role"):
        embedder.encode(TEXTS, role="passage")
    with pytest.raises(ValueError, match="was not encoded"):
        StatesEmbedder(tiny, config, "last", layer=99)
    assert StatesEmbedder(tiny, config, "last").identity != embedder.identity


def test_a_map_wraps_any_embedder_and_the_adapter_wraps_any_embedder(tiny):
    inner = StatesEmbedder(tiny, EncodeConfig(max_length=32), "last")
    mapped = MappedEmbedder(inner, Scaled(), "first3x2")
    np.testing.assert_allclose(mapped.encode(TEXTS), inner.encode(TEXTS)[:, :3] * 2)
    assert mapped.dim == 3 and mapped.identity.endswith("|first3x2")
    adapter = MtebEncoder(mapped)
    assert adapter.mteb_model_meta.embed_dim == 3
    with pytest.raises(TypeError, match="wraps an Embedder"):
        MtebEncoder(object())
    # the adapter hands retrieval documents role="document", everything else role="query"
    seen = []

    class Spy(Embedder):
        dim, identity = 2, "spy"

        def embed(self, texts, role, instruction):
            seen.append(role)
            return np.ones((len(texts), 2), dtype=np.float32)

    run_mteb(MtebEncoder(Spy()), [offline_task("SciFact", "smoke")])
    assert set(seen) == {"query", "document"}
    seen.clear()
    run_mteb(MtebEncoder(Spy()), [offline_task("STS17", "smoke")])
    assert set(seen) == {"query"}


def test_the_one_weights_digest_equals_the_two_stored_kinds(tiny_dir):
    """Scores stored before the move carry digests computed two ways: Paper 1's over parameters named lora_/head.,
    AutoRegEmbed's over every parameter with requires_grad. The one digest (trainable parameters) gives both."""
    from repro.autoregembed.config import CompressConfig
    from repro.autoregembed.model import build_autoreg
    from repro.training.contrastive import TrainConfig, build_model

    def old(model, keep):
        digest = hashlib.sha256()
        for name, param in sorted(model.named_parameters()):
            if keep(name, param):
                digest.update(name.encode())
                digest.update(param.detach().cpu().numpy().tobytes())
        return digest.hexdigest()[:16]

    for number in (1, 5, "mean"):
        model = build_model(TrainConfig(backbone=tiny_dir, model=number, head_latents=4, head_heads=4))
        assert weights_digest(model) == old(model, lambda n, _: "lora_" in n or n.startswith("head."))
    for finetune in ("full", "lora"):
        model = build_autoreg(CompressConfig(backbone=tiny_dir, finetune=finetune))
        assert weights_digest(model) == old(model, lambda _, p: p.requires_grad)


@pytest.mark.integration
def test_embedders_on_smollm2_reproduce_committed_scores_through_the_one_adapter(smollm2, monkeypatch):
    """[n, d] on the real backbone; PromptEOL raw and EmbedFilter edge/2 through MtebEncoder give exactly the
    STS17 scores the committed EmbedFilter sweep stored (compact suite)."""
    from repro.embedfilter.sweep import encode_config, filters_for, stored_scores
    from repro.store.paths import REPO_ROOT

    config = encode_config(smollm2, "prompteol")
    embedder = StatesEmbedder(smollm2, config, "last")
    out = embedder.encode(TEXTS)
    assert out.shape == (3, 576) and out.dtype == np.float32
    with pytest.raises(TypeError, match="single string"):
        embedder.encode("A man is playing a guitar.")
    with monkeypatch.context() as committed:
        committed.setenv("REPRO_RESULTS_DIR", str(REPO_ROOT / "results"))
        rows = stored_scores("compact", tokenization="pieces")  # the encode_config default above
    rows = rows[(rows["backbone"] == "smollm2-135m") & (rows["prompt"] == "prompteol") & (rows["task"] == "STS17")]
    assert len(rows) == rows["variant"].nunique() > 0
    stored = dict(zip(rows["variant"], rows["main_score"]))
    maps = filters_for(smollm2, config, ["raw", "edge/2"])
    for variant, fmap in maps.items():
        scores = run_mteb(states_encoder(smollm2, config, "last", transform=fmap), [offline_task("STS17", "compact")])
        assert scores["main_score"].iloc[0] == pytest.approx(stored[variant], abs=1e-9), variant


def test_a_recipe_is_the_pages_configuration_in_one_line(tiny_dir, tmp_path):
    from repro.core.backbones import load_backbone
    from repro.embedfilter.filters import make_filter, unembedding_spectrum
    from repro.embedfilter.sweep import encode_config
    from repro.recipes.recipe import from_recipe, parse_recipe
    from repro.training.contrastive import TrainConfig, TrainedEmbedder, load_trained, train

    texts = ["a man plays a guitar", "rain tomorrow", "", "a man plays a guitar"]
    backbone = load_backbone(tiny_dir)
    raw = from_recipe(f"{tiny_dir}/echo")
    # the EmbedFilter pages' Echo states, under their official tokenization (the default) or the earlier pieces
    direct = encode(backbone, texts, encode_config(backbone, "echo", tokenization="official"))["mean"][-1]
    np.testing.assert_array_equal(raw.encode(texts), direct)
    pieces = encode(backbone, texts, encode_config(backbone, "echo", tokenization="pieces"))["mean"][-1]
    np.testing.assert_array_equal(from_recipe(f"{tiny_dir}/echo", tokenization="pieces").encode(texts), pieces)
    assert not np.allclose(direct, pieces)  # the two forms differ on this backbone: the default is tested
    for recipe, tokenization, error in ((f"{tiny_dir}/echo", "offical", "unknown tokenization 'offical'"),
                                        (f"{tiny_dir}/mean", "official", "EmbedFilter's, for the prompt recipes")):
        with pytest.raises(ValueError, match=error):
            from_recipe(recipe, tokenization=tokenization)
    filtered = from_recipe(f"{tiny_dir}/echo+edge/2")
    edge = make_filter("edge/2", spectrum=unembedding_spectrum(backbone))
    assert filtered.dim == backbone.hidden_size // 2
    np.testing.assert_allclose(filtered.encode(texts), edge(direct), rtol=1e-5, atol=1e-6)
    assert from_recipe(f"{tiny_dir}/mean").encode(texts).shape == (4, backbone.hidden_size)
    assert parse_recipe("Qwen/Qwen2.5-0.5B/echo+edge/2") == ("Qwen/Qwen2.5-0.5B", "echo", "edge/2")
    for bad, error in (("smollm2-135m", "unknown recipe"), ("smollm2-135m/echoo", "unknown recipe"),
                       ("smollm2-135m/echo+", "unknown recipe"), ("smollm2-135m/echo+edgy/2", "edgy")):
        with pytest.raises(ValueError, match=error):
            parse_recipe(bad)
    with pytest.raises(TypeError, match="a recipe is a string"):
        from_recipe(["smollm2-135m/echo"])
    with pytest.raises(FileNotFoundError, match="not a trained run"):
        from_recipe(f"run:{tmp_path / 'nothing'}")
    # a trained run by its folder: the same embeddings as the run's own Embedder
    config = TrainConfig(backbone=tiny_dir, model=1, steps=1, batch_size=4, validation_triplets=0, max_length=24,
                         lora_dropout=0.0, warmup_steps=1, eval_every=5, checkpoint_every=5,
                         validation_sts_pairs=8)
    train(config, tmp_path / "run", progress=False)
    model, loaded = load_trained(tmp_path / "run" / "final")
    np.testing.assert_allclose(from_recipe(f"run:{tmp_path / 'run'}").encode(texts),
                               TrainedEmbedder(model, loaded).encode(texts), rtol=1e-5, atol=1e-6)


def test_repro_encode_writes_a_file_of_texts_and_refuses_bad_input_in_one_line(tiny_dir, tmp_path, capsys):
    import json as json_module

    from repro.cli import main as cli
    from repro.recipes.recipe import from_recipe
    from repro.recipes.recipes import encode_file

    (tmp_path / "texts.txt").write_text("a man plays a guitar\n\nrain tomorrow\n")
    (tmp_path / "texts.jsonl").write_text("\n".join(json_module.dumps({"text": t}) for t in
                                                    ["a man plays a guitar", "rain tomorrow"]))
    cli(["encode", "--recipe", f"{tiny_dir}/prompteol+edge/2", "--input", str(tmp_path / "texts.txt"),
         "--output", str(tmp_path / "out" / "emb.npy")])
    saved = np.load(tmp_path / "out" / "emb.npy")
    # one row per line: the blank line is an empty text, so row i is line i (never dropped, never shifted)
    assert saved.shape == (3, 16) and saved.dtype == np.float32 and "3 x 16 float32" in capsys.readouterr().out
    assert np.isfinite(saved).all()
    old_umask = os.umask(0o022)
    try:
        again = encode_file(f"{tiny_dir}/prompteol+edge/2", tmp_path / "texts.jsonl", tmp_path / "b.npy",
                            progress=False)
    finally:
        os.umask(old_umask)
    assert (tmp_path / "b.npy").stat().st_mode & 0o777 == 0o644  # readable by others, as the umask allows
    # .jsonl reads the same texts (other batches than the .txt's three: equal up to float rounding)
    np.testing.assert_allclose(again, saved[[0, 2]], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(saved[1], from_recipe(f"{tiny_dir}/prompteol+edge/2").encode([""])[0], rtol=1e-5,
                               atol=1e-6)
    (tmp_path / "empty.txt").write_text("\n")
    (tmp_path / "bad.jsonl").write_text('{"sentence": "x"}\n')
    (tmp_path / "gap.jsonl").write_text('{"text": "x"}\n\n{"text": "y"}\n')
    (tmp_path / "latin1.txt").write_bytes("caf\u00e9\nnaive\n".encode("latin-1"))
    for args, message in (([str(tmp_path / "nothing.txt")], "no such file"), ([str(tmp_path / "empty.txt")], "is empty"),
                          ([str(tmp_path / "texts.csv")], "input files are .txt or .jsonl"),
                          ([str(tmp_path / "bad.jsonl")], "line 1: a JSON object with a string 'text'"),
                          ([str(tmp_path / "gap.jsonl")], "line 2 is blank"),
                          ([str(tmp_path / "latin1.txt")], "line 1: not UTF-8 .*iconv")):
        with pytest.raises(SystemExit, match=message):
            cli(["encode", "--recipe", f"{tiny_dir}/echo", "--input", *args, "--output", str(tmp_path / "x.npy")])
    with pytest.raises(SystemExit, match="unknown recipe 'tiny/echoo'.*repro recipes. lists the recipes"):
        cli(["encode", "--recipe", "tiny/echoo", "--input", str(tmp_path / "texts.txt"),
             "--output", str(tmp_path / "x.npy")])


def test_repro_evaluate_scores_a_recipe_stores_it_and_the_harness_check_is_its_own_command(tiny_dir, capsys, monkeypatch):
    from repro.cli import main as cli
    from repro.recipes import recipes
    from repro.store.results import all_results

    cli(["evaluate", "--recipe", f"{tiny_dir}/echo+edge/2", "--suite", "smoke", "--tasks", "STSBenchmark"])
    out = capsys.readouterr().out
    assert "STSBenchmark" in out and "mean over 1 tasks" in out
    stored = all_results(recipes.RECIPE_SCORES)
    assert len(stored) == 1 and stored[0]["params"]["recipe"] == f"{tiny_dir}/echo+edge/2"
    assert stored[0]["params"]["tokenization"] == "official"  # the default; the earlier pieces keys name none
    assert recipes.evaluated_params(f"{tiny_dir}/echo", "pieces") == {"recipe": f"{tiny_dir}/echo"}
    assert recipes.evaluated_params(f"{tiny_dir}/p1-model1") == {"recipe": f"{tiny_dir}/p1-model1"}
    monkeypatch.setattr(recipes, "from_recipe", lambda *a, **k: pytest.fail("recomputed a stored score"))
    again = recipes.evaluate_recipe(f"{tiny_dir}/echo+edge/2", "smoke", ["STSBenchmark"], progress=False)
    assert again["main_score"].iloc[0] == stored[0]["rows"][0]["main_score"]
    with pytest.raises(SystemExit, match="unknown recipe"):
        cli(["evaluate", "--recipe", "tiny/nope", "--suite", "smoke"])
    from repro.core import reference

    calls = []
    monkeypatch.setattr(reference, "compare", lambda suite, recompute=False: calls.append(suite) or pd.DataFrame(
        {"task": ["STSBenchmark"], "ours": [82.0]}))
    with pytest.raises(SystemExit, match="repro harness"):  # the harness check is its own command now
        cli(["evaluate", "--suite", "full"])
    cli(["harness", "--suite", "full"])  # the MiniLM harness check
    assert calls == ["full"] and "STSBenchmark" in capsys.readouterr().out


def test_a_cached_embedder_encodes_each_text_once_per_key(tmp_path, monkeypatch):
    from repro.core.embedder import CachedEmbedder, Embedder

    monkeypatch.setenv("REPRO_STATES_DIR", str(tmp_path))
    calls = []

    class Counting(Embedder):
        dim, identity, digest = 3, "counting", "abc"

        def embed(self, texts, role, instruction):
            calls.append(list(texts))
            return np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32)

    texts = ["banana", "apple", "banana", "kiwi", ""]
    reference = Counting().encode(texts)
    calls.clear()
    cached = CachedEmbedder(Counting(), "key-1", chunk_size=2)
    first = cached.encode(texts)
    assert np.array_equal(first, reference) and cached.digest == "abc"
    assert sorted(t for call in calls for t in call) == sorted(set(texts))  # each unique text once, in chunks of 2
    calls.clear()
    assert np.array_equal(CachedEmbedder(Counting(), "key-1", chunk_size=2).encode(texts[::-1]), first[::-1])
    assert calls == []  # read from the disk cache
    CachedEmbedder(Counting(), "key-2", chunk_size=2).encode(texts)
    assert calls  # another key (other weights or settings) never reads key-1's files
    calls.clear()
    CachedEmbedder(Counting(), "key-1", chunk_size=2).encode(texts, role="document")
    assert calls  # nor another role


def test_every_command_answers_a_bad_input_with_one_line_no_traceback_and_a_nonzero_exit(tmp_path, monkeypatch,
                                                                                         capsys):
    """An unknown page, a parameter of the wrong type, an unknown recipe, a missing or non-UTF-8 file each give one
    line on stderr naming the problem, no traceback, exit status 1: run as a user would (a fresh process) for one
    command, and through the same entry point in this process for the others (a fresh process costs 7-15 s of
    imports a command; what it adds, the interpreter's exit, is the first case's)."""
    import subprocess
    import sys

    from repro.cli import main

    (tmp_path / "latin1.txt").write_bytes("caf\u00e9\n".encode("latin-1"))
    cases = [
        (["encode", "--recipe", "smollm2-135m/echo", "--input", str(tmp_path / "latin1.txt"), "--output",
          str(tmp_path / "x.npy")], "line 1: not UTF-8"),
        (["build", "--only", "nosuchpage", "--no-site"], "unknown notebook 'nosuchpage'"),
        (["build", "--only", "p2_main_table", "-p", "ratios=abc", "--no-site"], "parameter 'ratios' must be a list"),
        (["encode", "--recipe", "smollm2-135m/nope", "--input", str(tmp_path / "latin1.txt"), "--output",
          str(tmp_path / "x.npy")], "unknown"),
        (["encode", "--recipe", "smollm2-135m/echo", "--input", str(tmp_path / "none.txt"), "--output",
          str(tmp_path / "x.npy")], "no such file"),
        (["evaluate", "--recipe", "smollm2-135m/nope", "--suite", "smoke"], "unknown"),
        (["evaluate", "--suite", "full"], "repro harness"),
        (["export", "smollm2-135m/nope", str(tmp_path / "out")], "unknown"),
        (["nosuchcommand"], "unknown command"),
    ]
    env = {"REPRO_RESULTS_DIR": str(tmp_path / "results"), "REPRO_TRAINING": "refuse"}
    (args, message), rest = cases[0], cases[1:]
    done = subprocess.run([sys.executable, "-m", "repro", *args], capture_output=True, text=True,
                          env=os.environ | env, cwd=tmp_path, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, (args, done.stderr[-2000:])
    last = [line for line in done.stderr.splitlines() if line.strip()][-1]
    assert last.startswith("repro") and message in last, (args, last)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    for args, message in rest:
        with pytest.raises(SystemExit) as stopped:  # any other exception would be a traceback
            main(args)
        assert isinstance(stopped.value.code, str), (args, stopped.value.code)  # a message: exit status 1
        last = stopped.value.code.strip().splitlines()[-1]
        assert last.startswith("repro") and message in last, (args, last)
        capsys.readouterr()


@pytest.mark.integration
def test_a_recipe_scored_by_repro_evaluate_equals_the_official_tokenization_sweep(monkeypatch):
    """`repro evaluate --recipe smollm2-135m/prompteol+edge/2 --suite full --tasks STSBenchmark` (the recipe's default,
    official tokenization) and the EmbedFilter sweep of the same backbone, prompt and tokenization on the full STS-B
    test: two paths (an Embedder through the harness; cached states, the filter map, the sweep's scoring), one score.
    Read from the committed results (the export equals the Embedder: tests/test_export.py)."""
    from repro.core.backbones import LazyBackbone
    from repro.embedfilter.sweep import embedfilter_task
    from repro.recipes import recipes
    from repro.store.paths import REPO_ROOT

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(REPO_ROOT / "results"))
    monkeypatch.setenv("REPRO_COMPUTE", "refuse")  # both must be stored: nothing is computed here
    recipe = "smollm2-135m/prompteol+edge/2"
    evaluated = recipes.evaluate_recipe(recipe, "full", ["STSBenchmark"], progress=False)
    sweep = embedfilter_task(LazyBackbone("smollm2-135m"), "STSBenchmark", "full", "prompteol", ["raw", "edge/2"],
                             progress=False, tokenization="official")
    swept = next(r["main_score"] for r in sweep["rows"] if r["variant"] == "edge/2")
    assert evaluated["main_score"].iloc[0] == pytest.approx(swept, abs=1e-9)
    assert recipes.recipe_tokenization(recipe) == "official"
