import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import tiny_backbone

from repro.training import cli as train_cli
from repro.training import contrastive as train_module
from repro.training import data as train_data
from repro.training import objective as objective_module
from repro.training.contrastive import TrainConfig, load_trained, train
from repro.training.data import batch_indices
from repro.training.heads import MODELS, TrainablePooling, head_inputs, head_parameters, make_head, model_spec
from repro.training.objective import info_nce


def _config(tiny_dir, **kw):
    base = dict(backbone=tiny_dir, model=5, steps=3, batch_size=4, validation_triplets=8, validation_sts_pairs=16,
                max_length=24, eval_every=100, checkpoint_every=2, lora_dropout=0.0, head_latents=4, head_heads=4,
                warmup_steps=1)
    return TrainConfig(**(base | kw))


def test_heads_pool_every_design_to_unit_vectors_and_ignore_padding():
    backbone = tiny_backbone("llama")
    ids = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    hidden = backbone.hidden_states(ids, mask)
    for number, spec in MODELS.items():
        states, padding = head_inputs(hidden, mask, spec.head_input)
        expected = {"eos": 1, "last_layer_eos": 1, "all_layers_eos": 3, "last_layer_tokens": 5, "all_layers_mean": 3}
        assert states.shape == (2, expected[spec.head_input], 32), number
        head = make_head(spec, 32, backbone.num_layers, latents=4, heads=4)
        assert (head is None) == (number == 1)
        if head is not None:
            out = head(states, padding)
            np.testing.assert_allclose(out.norm(dim=-1).detach().numpy(), 1.0, atol=1e-5)
    # padding is invisible to the token head: more pad positions, same embedding
    head = TrainablePooling(32, None, latents=4, heads=4)
    states, padding = head_inputs(hidden, mask, "last_layer_tokens")
    wider = torch.cat([states, torch.randn(2, 3, 32)], dim=1)
    wider_padding = torch.cat([padding, torch.ones(2, 3, dtype=torch.bool)], dim=1)
    torch.testing.assert_close(head(states, padding), head(wider, wider_padding), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="layer states"):
        TrainablePooling(32, 3, latents=4, heads=4)(torch.randn(2, 5, 32))
    with pytest.raises(ValueError, match="1..5"):
        model_spec(6)
    # the default head is a modest fraction of a 576-wide backbone
    assert 4e6 < head_parameters(TrainablePooling(576, 30)) < 7e6


def test_info_nce_is_cross_entropy_over_positives_and_hard_negatives():
    torch.manual_seed(0)
    q, p, n = (torch.nn.functional.normalize(torch.randn(4, 8), dim=-1) for _ in range(3))
    logits = q @ torch.cat([p, n]).T / 0.05
    expected = -torch.log_softmax(logits, dim=1)[torch.arange(4), torch.arange(4)].mean()
    torch.testing.assert_close(info_nce(q, p, n, 0.05), expected)
    assert info_nce(q, q, -q, 0.05) < 0.01  # perfectly aligned


def test_batches_are_a_function_of_seed_and_step_and_cover_each_epoch():
    seen = [i for step in range(5) for i in batch_indices(20, 4, step, seed=1)]
    assert sorted(seen) == list(range(20))
    assert batch_indices(20, 4, 7, 1) == batch_indices(20, 4, 7, 1) and batch_indices(20, 4, 5, 1) != seen[:4]
    with pytest.raises(ValueError):
        batch_indices(3, 4, 0, 0)
    for bad in (dict(model=7), dict(steps=0), dict(batch_size=2.5), dict(data="web"), dict(temperature=0.0)):
        with pytest.raises(ValueError):
            TrainConfig(**bad)


def test_train_saves_reloads_and_resumes_exactly(tiny_dir, tmp_path, monkeypatch):
    from repro.training.lora import merged_for_inference

    config = _config(tiny_dir, steps=4)
    merges = []

    def spy(model):  # every dev evaluation encodes with the adapters merged into a copy, never the trained model
        merged = merged_for_inference(model)
        merges.append(merged is not model)
        return merged

    monkeypatch.setattr(train_module, "merged_for_inference", spy)
    full = train(config, tmp_path / "full", progress=False)
    assert merges and all(merges) and len(merges) == sum("validation_sts" in r for r in full["history"])
    assert full["examples_seen"] == 16 and full["tokens_seen"] > 0 and full["head_parameters"] > 0
    assert full["history"][0]["step"] == 0 and "validation_sts" in full["history"][0]
    model, loaded_config = load_trained(tmp_path / "full" / "final")
    assert loaded_config == config
    collate = train_module.Collator(model.backbone.tokenizer, config)
    texts = ["A man is playing a guitar.", "Rain tomorrow."]
    first = train_module.embed_texts(model, collate, texts)
    again, _ = load_trained(tmp_path / "full" / "final")
    np.testing.assert_array_equal(first, train_module.embed_texts(again, collate, texts))

    calls = {"n": 0}
    original = objective_module.info_nce  # the training step's loss (repro.training.objective.batch_loss)

    def dies_at_step_three(*args, **kwargs):
        calls["n"] += bool(args[0].requires_grad)  # training steps only (validation has no gradients)
        if calls["n"] == 3:
            raise KeyboardInterrupt("killed")
        return original(*args, **kwargs)

    monkeypatch.setattr(objective_module, "info_nce", dies_at_step_three)
    with pytest.raises(KeyboardInterrupt):
        train(config, tmp_path / "killed", progress=False)
    assert json.loads((tmp_path / "killed" / "train_state.json").read_text())["step"] == 2
    assert not any(p.stat().st_size > 50e6 for p in (tmp_path / "killed").rglob("*") if p.is_file())
    monkeypatch.setattr(objective_module, "info_nce", original)
    resumed = train(config, tmp_path / "killed", progress=False)
    assert resumed["examples_seen"] == 16
    resumed_model, _ = load_trained(tmp_path / "killed" / "final")
    np.testing.assert_allclose(train_module.embed_texts(resumed_model, collate, texts), first, atol=1e-5)
    with pytest.raises(ValueError, match="another configuration"):
        train(_config(tiny_dir, steps=5), tmp_path / "killed", progress=False)


def test_two_processes_compute_the_single_process_gradient(tiny_dir, tmp_path):
    """accelerate launch, 2 CPU processes (gloo), each half of the global batch: the averaged gradient
    equals one process's gradient on the whole global batch (embeddings gathered with gradients)."""
    args = ["--backbone", tiny_dir, "--model", "3", "--steps", "3", "--batch-size", "8", "--lora-dropout", "0.0",
            "--warmup-steps", "1",
            "--validation-triplets", "8", "--validation-sts-pairs", "8", "--head-latents", "4", "--head-heads", "4",
            "--max-length", "24"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    single = tmp_path / "single.pt"
    subprocess.run([sys.executable, "-m", "repro.training.contrastive", *args, "--output", str(tmp_path / "one"),
                    "--dump-grads", str(single)], check=True, env=env, capture_output=True)
    double = tmp_path / "double.pt"
    # --multi_gpu selects accelerate's torchrun launcher; with no GPU each process runs on CPU with gloo
    # (--cpu would select the single-process launcher)
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
              "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29517",
              "-m", "repro.training.contrastive", *args, "--output", str(tmp_path / "two"), "--dump-grads", str(double)]
    result = subprocess.run(launch, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    two = json.loads((tmp_path / "two" / "summary.json").read_text())
    one = json.loads((tmp_path / "one" / "summary.json").read_text())
    assert two["processes"] == 2 and one["processes"] == 1
    # the learning-rate schedule advances once per optimizer step whatever the number of processes
    lrs = [[h["lr"] for h in run["history"] if "lr" in h] for run in (one, two)]
    assert lrs[0] == pytest.approx(lrs[1]) and len(lrs[0]) == 3 and lrs[0][1] > 0
    a, b = torch.load(single), torch.load(double)
    assert a.keys() == b.keys() and len(a) > 10
    assert any("head" in k for k in a) and any("lora_A" in k for k in a)
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=1e-4, atol=1e-6, msg=name)


def test_run_folders_differ_by_every_setting_and_validation_anchors_never_train(tiny_dir):
    from repro.core.stats import wilcoxon_over_tasks
    from repro.training.contrastive import run_spec

    names = {run_spec(_config(tiny_dir, **kw)).name for kw in ({}, {"steps": 5}, {"seed": 1}, {"lr": 1e-3})}
    assert len(names) == 4
    train_rows, held = train_data.split_triplets("nli", 300, 0)
    assert len(held) >= 300 and not {r["query"] for r in train_rows} & {r["query"] for r in held}
    # the direction of a Wilcoxon result follows the signed ranks, not the mean
    result = wilcoxon_over_tasks([30, 0, 0, 0, 0, 0, 0, 0], [0, 1, 2, 3, 4, 5, 6, 7])
    assert result["mean_difference"] > 0 and result["signed_rank_sum"] < 0


def test_later_fields_keep_earlier_run_keys_and_the_cli_parses_booleans_and_baselines():
    earlier = {"backbone", "model", "data", "validation_triplets", "steps", "batch_size", "lr", "warmup_steps",
               "weight_decay", "temperature", "max_length", "prompt", "lora_r", "lora_alpha", "lora_dropout",
               "head_latents", "head_heads", "seed", "eval_every", "checkpoint_every", "validation_sts_pairs"}
    assert set(TrainConfig().identity()) == earlier
    changed = TrainConfig(train_examples=100, hard_negatives=False).identity()
    assert changed["train_examples"] == 100 and changed["hard_negatives"] is False
    import argparse

    parser = argparse.ArgumentParser()
    train_cli.add_config_arguments(parser, train_module.TrainConfig)
    args = vars(parser.parse_args(["--model", "mean", "--hard-negatives", "false", "--train-examples", "64"]))
    config = TrainConfig(**args)
    assert config.model == "mean" and config.hard_negatives is False and config.train_examples == 64
    assert TrainConfig(**vars(parser.parse_args(["--model", "3"]))).model == 3
    with pytest.raises(SystemExit):
        parser.parse_args(["--hard-negatives", "maybe"])
    with pytest.raises(ValueError, match="unknown model"):
        TrainConfig(model="median")
    with pytest.raises(ValueError, match="exceeds"):
        train_data.subset(list(range(10)), 11, 0)
    assert train_data.subset(list(range(10)), 4, 0) == train_data.subset(list(range(10)), 4, 0)


def test_mean_pooling_baseline_averages_real_tokens_only():
    hidden = [torch.randn(2, 4, 8) for _ in range(3)]
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    states, padding = head_inputs(hidden, mask, "mean")
    assert padding is None and states.shape == (2, 1, 8)
    torch.testing.assert_close(states[0, 0], hidden[-1][0, :2].mean(0))
    assert make_head(model_spec("mean"), 8, 2) is None


def test_ranking_agreement_reads_kendall_tau_per_category():
    import numpy as np
    import pandas as pd

    from repro.verdicts.comparison import ranking_agreement

    index = pd.MultiIndex.from_tuples([("STS", "a"), ("STS", "b"), ("Classification", "c")], names=["category", "task"])
    first = pd.DataFrame(np.array([[1, 2, 3, 4, 5], [2, 3, 4, 5, 6], [5, 4, 3, 2, 1]], float), index=index,
                         columns=[1, 2, 3, 4, 5])
    same = ranking_agreement(first, first + 0.5, ["STS", "Retrieval"]).set_index("category")
    assert same.loc["STS", "order (first)"] == "5 > 4 > 3 > 2 > 1" and same.loc["STS", "Kendall tau"] == pytest.approx(1.0)
    assert same.loc["STS", "verdict"] == "same ranking (significant)"
    assert same.loc["Retrieval", "verdict"] == "missing results"
    reversed_ = ranking_agreement(first, -first, ["STS"]).iloc[0]
    assert reversed_["verdict"] == "reversed ranking (significant)"
    swapped = first.copy()
    swapped[[1, 2]] = first[[2, 1]].to_numpy()  # one swapped pair of five: tau 0.8
    assert ranking_agreement(first, swapped, ["STS"]).iloc[0]["Kendall tau"] == pytest.approx(0.8)


def test_scores_from_lost_weights_are_refused_and_only_those_are_recomputed_when_stale(monkeypatch):
    """Weights lost and retrained elsewhere (other digest): mixing is an error; recompute_stale redoes the tasks
    stored from the old weights and keeps the ones already computed from the current weights."""
    import pandas as pd

    from repro.core import scoring
    from repro.core.embedder import Embedder

    class Constant(Embedder):
        dim, identity = 2, "constant"

        def embed(self, texts, role, instruction):
            return np.ones((len(texts), 2), dtype=np.float32)

    calls = []

    def fake_evaluate(tasks, encoders, progress, pair_similarities, units=None):
        calls.append(tasks[0])
        return pd.DataFrame([{"task": tasks[0], "main_score": 0.5}])

    monkeypatch.setattr(scoring, "suite_task", lambda name, suite: name)
    monkeypatch.setattr(scoring, "evaluate_encoders", fake_evaluate)

    def run(digest, tasks, **kw):
        return scoring.evaluate_per_task("stale_test", {"train": {"model": 1}}, "smoke", tasks,
                                         lambda: (Constant(), digest), progress=False, **kw)

    run("old", ["STS12", "STS13"])
    run("new", ["STS14"])  # retrained weights, a task that was missing
    assert calls == ["STS12", "STS13", "STS14"]
    with pytest.raises(ValueError, match="different trained weights"):
        run("new", ["STS12", "STS13", "STS14"])
    calls.clear()
    run("new", ["STS12", "STS13", "STS14"], recompute_stale=True)
    assert calls == ["STS12", "STS13"]
    calls.clear()
    run("new", ["STS12", "STS13", "STS14"])  # consistent now: nothing to compute
    assert calls == []


def test_task_instructions_go_before_query_side_texts_only(tiny_dir):
    from repro.core.evaluate import MtebEncoder
    from repro.core.tasks import TASKS, offline_task
    from repro.pooling_attention.instructions import INSTRUCTIONS

    assert set(INSTRUCTIONS) == set(TASKS)  # every offline task has its instruction
    config = TrainConfig(backbone=tiny_dir, model=1, max_length=24, lora_dropout=0.0)
    embedder = train_module.TrainedEmbedder(train_module.build_model(config), config, max_length=256)
    texts = ["A man is playing a guitar.", "Rain tomorrow."]
    plain = embedder.encode(texts)
    assert embedder.inference_model is not embedder.model  # encoded through the merged copy
    instructed = embedder.encode(texts, instruction=INSTRUCTIONS["STS12"])
    assert instructed.shape == plain.shape and not np.allclose(plain, instructed)
    np.testing.assert_array_equal(embedder.encode(texts), plain)  # the plain path is unchanged afterwards
    encoder = MtebEncoder(embedder, "tiny", instructions=INSTRUCTIONS)
    scifact = offline_task("SciFact", "smoke").metadata
    assert encoder.instruction_for(scifact, "query") == INSTRUCTIONS["SciFact"]
    assert encoder.instruction_for(scifact, "document") is None
    assert MtebEncoder(embedder, "tiny").instruction_for(scifact, "query") is None


def test_a_plain_optimizer_step_trains_on_the_run_loss_and_counts_real_tokens(tiny_dir):
    from repro.training.contrastive import Collator, build_model
    from repro.training.data import split_triplets
    from repro.training.loop import trainable_parameters
    from repro.training.objective import batch_loss, optimizer_step

    config = _config(tiny_dir, model=5, lora_dropout=0.0, packing=True)
    torch.manual_seed(0)
    model = build_model(config)
    collate = Collator(model.backbone.tokenizer, config)
    rows = split_triplets(config.data, config.validation_triplets, config.seed)[0][:4]
    optimizer = torch.optim.AdamW(trainable_parameters(model), lr=1e-3)
    model.train()
    with torch.no_grad():
        before, tokens = batch_loss(model, collate, rows, config, "cpu")
    texts = [t for r in rows for t in (r["query"], r["positive"], r["negative"])]
    assert tokens == sum(len(collate.tokenize(t).ids) for t in texts)  # real tokens: no padding counted
    assert all(optimizer_step(model, collate, rows, config, optimizer) == tokens for _ in range(5))
    with torch.no_grad():
        after, _ = batch_loss(model, collate, rows, config, "cpu")
    assert after < before
    no_negatives = TrainConfig(**(config.__dict__ | {"hard_negatives": False}))
    with torch.no_grad():  # in-batch negatives only: another loss on the same embeddings
        assert batch_loss(model, collate, rows, no_negatives, "cpu")[0] != after


def test_accumulation_averages_the_gradients_of_consecutive_batches_and_keeps_earlier_keys(tmp_path):
    """An optimizer step with ``accumulation`` n sums the gradients of batches n*step .. n*step+n-1, each loss
    divided by n (the official Paper 1 scheme: negatives inside each batch, n batches a step); 1 is the old loop,
    and the field stays out of the run key at its default."""
    from dataclasses import dataclass

    from repro.training.loop import LoopSettings, make_accelerator, run_training

    assert "accumulation" not in TrainConfig().identity() and TrainConfig(accumulation=4).identity()["accumulation"] == 4
    with pytest.raises(ValueError, match="accumulation must be a positive integer"):
        TrainConfig(accumulation=0)
    data = torch.randn(8, 3, generator=torch.Generator().manual_seed(0))

    def batch_loss(model, batch):
        return ((model(data[2 * batch:2 * batch + 2]) - 1.0) ** 2).mean()

    @dataclass
    class Config(LoopSettings):  # every setting the loop reads is declared there
        lr: float = 0.1
        steps: int = 1
        eval_every: int = 1
        checkpoint_every: int = 1
        schedule: str = "constant"

    def run(accumulation, folder):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        seen = []

        def step_loss(m, step, rank, world):
            seen.append(step)
            return batch_loss(m, step), 2, 2

        run_training(make_accelerator(), model, Config(accumulation=accumulation), tmp_path / folder, step_loss,
                     lambda core: {}, "toy", progress=False, dump_grads=tmp_path / f"{folder}.pt")
        return seen, torch.load(tmp_path / f"{folder}.pt")

    seen, grads = run(3, "three")
    assert seen == [0, 1, 2]  # the first step reads batches 0, 1 and 2
    torch.manual_seed(0)
    reference = torch.nn.Linear(3, 1)
    sum(batch_loss(reference, b) for b in range(3)).div(3).backward()
    for name, parameter in reference.named_parameters():
        torch.testing.assert_close(grads[name], parameter.grad)
    seen, single = run(1, "one")
    assert seen == [0]
    torch.manual_seed(0)
    reference = torch.nn.Linear(3, 1)
    batch_loss(reference, 0).backward()
    torch.testing.assert_close(single["weight"], reference.weight.grad)
