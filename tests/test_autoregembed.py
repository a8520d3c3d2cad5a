import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from conftest import tiny_backbone

from repro.autoregembed import config as ar_config
from repro.autoregembed import data as ar_data
from repro.autoregembed import model as ar_model
from repro.autoregembed import objectives as ar_objectives
from repro.autoregembed import probe as ar_probe
from repro.autoregembed import train as ar_train
from repro.autoregembed.config import AlignConfig, CompressConfig
from repro.autoregembed.experiments import baselines as ar_baselines
from repro.autoregembed.experiments import cli as ar_cli
from repro.autoregembed.experiments import data_efficiency as ar_efficiency
from repro.autoregembed.experiments import provenance as ar_provenance
from repro.autoregembed.experiments import scores as ar_scores
from repro.autoregembed.experiments import tables as ar_tables
from repro.autoregembed.model import TextIds, build_autoreg
from repro.autoregembed.objectives import alignment_loss_from_scores, alignment_scores, divergence
from repro.autoregembed.train import load_encoder, train_alignment, train_compression
from repro.store.fingerprint import weights_digest
from repro.store.runs import ensure_trained, train_or_load
from repro.training import loop


def _compress(tiny_dir, **kw):
    base = dict(backbone=tiny_dir, steps=3, batch_size=4, eval_every=100, checkpoint_every=2,
                validation_examples=4, max_length=48, target_max_length=12, lr=1e-3, warmup_steps=1)
    return CompressConfig(**(base | kw))


def _align(tiny_dir, compress, **kw):
    base = dict(compress=compress, backbone=tiny_dir, steps=3, batch_size=4, eval_every=100, checkpoint_every=2,
                validation_sts_pairs=8, validation_triplets=8, train_examples=32, max_length=32,
                target_max_length=12, lr=1e-3, warmup_steps=1)
    if compress is not None:
        base["finetune"] = compress.finetune
    return AlignConfig(**(base | kw))


@pytest.mark.parametrize("finetune", ["full", "lora"])
def test_decoder_is_the_frozen_original_and_log_probs_match_transformers_loss(tiny_dir, finetune):
    config = _compress(tiny_dir, finetune=finetune)
    model = build_autoreg(config)
    original = tiny_backbone("llama").model
    texts = TextIds(model.backbone.tokenizer, 48, 12)
    ids, mask = texts.pad_batch([texts.encoder("A man is playing a guitar."), texts.encoder("Rain.")])
    target, target_mask = texts.pad_batch([texts.target("The cat sat on the mat."), texts.target("Rain")])
    memory = model.memory(ids, mask)
    assert memory.shape == (2, config.compression_tokens, 32)
    # a text's memory does not depend on the other rows (padding) of its batch
    alone = model.memory(*texts.pad_batch([texts.encoder("Rain.")]))
    torch.testing.assert_close(alone[0], memory[1], atol=1e-5, rtol=1e-4)
    summed = model.target_log_probs(memory, target, target_mask)
    # the same quantity from transformers' own loss on the ORIGINAL model fed [memory, target embeddings]
    for row in range(2):
        n = int(target_mask[row].sum())
        embeds = torch.cat([memory[row:row + 1], original.get_input_embeddings()(target[row:row + 1, :n])], 1)
        labels = torch.cat([torch.full((1, config.compression_tokens), -100), target[row:row + 1, :n]], 1)
        loss = original(inputs_embeds=embeds, labels=labels).loss
        torch.testing.assert_close(summed[row], -loss * n, atol=1e-4, rtol=1e-4)
    # gradients reach the encoder and the compression tokens, never the decoder
    (-summed.sum()).backward()
    assert model.compression.grad is not None and model.compression.grad.abs().sum() > 0
    encoder_grads = [p.grad for n, p in model.named_parameters() if p.requires_grad and n != "compression"]
    assert encoder_grads and any(g is not None and g.abs().sum() > 0 for g in encoder_grads)
    if finetune == "full":
        assert not any(p.requires_grad for p in model.decoder_ref[0].parameters())


def test_uninformative_reconstruction_ignores_the_encoder_and_is_stored(tiny_dir, tmp_path, monkeypatch):
    from repro.autoregembed.data import read_instructions
    from repro.autoregembed.experiments.stage1 import UNINFORMATIVE_EXPERIMENT, uninformative_reconstruction
    from repro.autoregembed.train import validation_reconstruction

    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path / "results"))
    config = _compress(tiny_dir)
    model = build_autoreg(config)
    texts = TextIds(model.backbone.tokenizer, config.max_length, config.target_max_length)
    rows = read_instructions()[:4]
    before = validation_reconstruction(model, texts, rows), validation_reconstruction(model, texts, rows, False)
    with torch.no_grad():  # another encoder: the informative loss moves, the uninformative one cannot
        for name, param in model.named_parameters():
            if param.requires_grad and name != "compression":
                param.add_(0.05 * torch.randn_like(param))
    after = validation_reconstruction(model, texts, rows), validation_reconstruction(model, texts, rows, False)
    assert before[0] != pytest.approx(after[0], rel=1e-6)
    assert before[1] == pytest.approx(after[1], rel=1e-6)
    stored = uninformative_reconstruction(config)
    assert stored == pytest.approx(before[1], rel=1e-5)
    assert len(list((tmp_path / "results" / UNINFORMATIVE_EXPERIMENT).glob("*.json"))) == 1


def test_alignment_scores_follow_the_paper_and_the_code():
    lp = {("p", "q"): torch.tensor([-10.0]), ("n", "q"): torch.tensor([-14.0]), ("p", "p"): torch.tensor([-9.0])}
    ref = {("p", "q"): torch.tensor([-11.0]), ("n", "q"): torch.tensor([-12.0])}
    beta, tau = 0.1, 0.05
    paper = AlignConfig(compress=None, backbone="x", beta=beta, temperature=tau)
    s1, (s2,) = alignment_scores(lp, ref, paper, None)
    assert float(s1) == pytest.approx(-1 / (1 + math.exp(-beta * 1.0)))  # |(-10) - (-9)| = 1
    margin = (-10 + 11) - (-14 + 12)  # (a - ref_a) - (b - ref_b) = 3
    assert float(s2) == pytest.approx(-1 / (1 + math.exp(-beta * margin)))
    code = AlignConfig(compress=None, backbone="x", reference_sign="code")
    _, (s2_code,) = alignment_scores(lp, ref, code, None)
    margin_code = (-10 + 14) + (-11 + 12)  # (a - b) + (ref_a - ref_b) = 5
    assert float(s2_code) == pytest.approx(-1 / (1 + math.exp(-beta * margin_code)))
    tanh = AlignConfig(compress=None, backbone="x", squash="tanh")
    assert float(alignment_scores(lp, ref, tanh, None)[0]) == pytest.approx(-math.tanh(beta))
    # with one negative the loss is softplus((S2 - S1) / tau), and it falls as the margin grows
    loss = alignment_loss_from_scores(s1, [s2], tau)
    assert float(loss) == pytest.approx(float(F.softplus((s2 - s1) / tau)), rel=1e-5)  # float32
    better = lp | {("n", "q"): torch.tensor([-20.0])}
    assert float(alignment_loss_from_scores(*alignment_scores(better, ref, paper, None), tau)) < float(loss)
    # strategy 3 adds a second S2 term (d+ over d- given e_d+): one more entry in the denominator
    lp3 = lp | {("n", "p"): torch.tensor([-13.0])}
    ref3 = ref | {("p", "p"): torch.tensor([-9.5]), ("n", "p"): torch.tensor([-12.5])}
    s1_3, terms = alignment_scores(lp3, ref3, AlignConfig(compress=None, backbone="x", strategy=3), None)
    assert len(terms) == 2 and float(s1_3) == pytest.approx(float(s1))


def test_divergences_are_zero_on_equal_distributions_and_js_is_bounded():
    torch.manual_seed(0)
    p = torch.log_softmax(torch.randn(2, 5, 11), -1)
    q = torch.log_softmax(torch.randn(2, 5, 11), -1)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert torch.allclose(divergence(p, p, mask, "kl"), torch.zeros(2), atol=1e-6)
    js = divergence(p, q, mask, "js")
    torch.testing.assert_close(js, divergence(q, p, mask, "js"))
    assert (js > 0).all() and (js <= mask.sum(1) * math.log(2) + 1e-6).all()
    assert (divergence(p, q, mask, "kl") > 0).all()


def test_bad_settings_are_refused(tiny_dir):
    with pytest.raises(ValueError, match="squash"):
        AlignConfig(compress=None, backbone="x", squash="relu")
    with pytest.raises(ValueError, match="strategy"):
        AlignConfig(compress=None, backbone="x", strategy=5)
    with pytest.raises(ValueError, match="differs from stage 1"):
        AlignConfig(compress=CompressConfig(backbone="a"), backbone="b")
    with pytest.raises(ValueError, match="finetune"):
        CompressConfig(finetune="half")
    with pytest.raises(ValueError, match="exceeds"):
        ar_data.split_align(AlignConfig(compress=None, backbone="x", train_examples=10 ** 6))
    with pytest.raises(ValueError, match="positive integer"):
        CompressConfig(steps=0)
    with pytest.raises(ValueError, match="max_grad_norm"):
        CompressConfig(max_grad_norm=0.0)


def test_two_stages_train_save_reload_and_resume(tiny_dir, tmp_path, monkeypatch):
    compress = _compress(tiny_dir)
    saved = []
    with monkeypatch.context() as patch:
        patch.setattr(loop, "save_checkpoint", lambda *a, **k: saved.append(a[-1]["step"]))
        first = train_compression(compress, tmp_path / "c", progress=False)
    # resume checkpoints every 2 of the 3 steps, none at the end (_finish would delete it unread: for a fully
    # fine-tuned 135M encoder, 1.6 GB); the readable record of the run's end is written
    assert saved == [2] and json.loads((tmp_path / "c" / "train_state.json").read_text())["step"] == 3
    assert first["examples_seen"] == 12 and first["history"][0]["validation_loss"] > 0
    assert not (tmp_path / "c" / "checkpoint").exists()  # a finished run keeps its weights, not its optimizer state
    # the gradient norm is clipped at max_grad_norm (logged before clipping) and, unclipped, is not logged
    logged = [h["grad_norm"] for h in first["history"] if "grad_norm" in h]
    assert len(logged) == compress.steps and all(n > 0 for n in logged)
    unclipped = train_compression(_compress(tiny_dir, max_grad_norm=None, steps=1), tmp_path / "u", progress=False)
    assert not any("grad_norm" in h for h in unclipped["history"])
    config = _align(tiny_dir, compress, strategy=4, divergence="js")
    full = train_alignment(config, tmp_path / "a", tmp_path / "c" / "final", progress=False)
    assert "validation_sts" in full["history"][-1] and full["tokens_seen"] > 0
    reference = torch.load(tmp_path / "a" / "reference.pt")
    assert set(reference["scores"]) == set(ar_objectives.reference_terms(4))
    assert reference["index"] == ar_objectives.seen_indices(32, config)

    model, loaded = load_encoder(tmp_path / "a" / "final")
    assert loaded == config
    texts = TextIds(model.backbone.tokenizer, config.max_length, config.target_max_length)
    items = ["A man is playing a guitar.", "Rain tomorrow.", ""]
    emb = ar_model.embed_texts(model, texts, items)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)
    stage1, _ = load_encoder(tmp_path / "c" / "final")
    assert not np.allclose(ar_model.embed_texts(stage1, texts, items), emb)  # stage 2 changed the encoder

    # killed after its first checkpoint, the run resumes and ends with the same weights
    calls = {"n": 0}
    original = ar_objectives.alignment_loss_from_scores

    def dies(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("killed")
        return original(*args, **kwargs)

    monkeypatch.setattr(ar_objectives, "alignment_loss_from_scores", dies)
    with pytest.raises(KeyboardInterrupt):
        train_alignment(config, tmp_path / "killed", tmp_path / "c" / "final", progress=False)
    monkeypatch.setattr(ar_objectives, "alignment_loss_from_scores", original)
    assert (tmp_path / "killed" / "checkpoint").is_dir()  # what a killed run resumes from
    train_alignment(config, tmp_path / "killed", tmp_path / "c" / "final", progress=False)
    assert not (tmp_path / "killed" / "checkpoint").exists()
    resumed, _ = load_encoder(tmp_path / "killed" / "final")
    np.testing.assert_allclose(ar_model.embed_texts(resumed, texts, items), emb, atol=1e-5)
    with pytest.raises(ValueError, match="another configuration"):
        train_alignment(_align(tiny_dir, compress, beta=0.2), tmp_path / "killed", tmp_path / "c" / "final",
                        progress=False)
    # reference scores computed from one stage 1 are never reused for a run starting from another
    (tmp_path / "r").mkdir()
    shutil.copy(tmp_path / "a" / "reference.pt", tmp_path / "r" / "reference.pt")
    with pytest.raises(ValueError, match="other stage-1 weights"):
        train_alignment(config, tmp_path / "r", tmp_path / "u" / "final", progress=False)


def test_experiment_runner_stores_scores_and_uses_the_passage_prompt_for_documents(tiny_dir, monkeypatch):
    from repro.store.results import all_results, result_path

    used = []
    original = ar_model.embed_texts

    def spy(model, texts, items, prompt=ar_config.QUERY_PROMPT, *args, **kwargs):
        used.append(prompt)
        return original(model, texts, items, prompt, *args, **kwargs)

    monkeypatch.setattr(ar_model, "embed_texts", spy)
    config = _align(tiny_dir, _compress(tiny_dir), steps=2, checkpoint_every=5)
    frame = ar_scores.evaluate_autoreg(config, "smoke", ["STSBenchmark", "SciFact"], eval_max_length=64, progress=False)
    assert set(frame["task"]) == {"STSBenchmark", "SciFact"} and frame["main_score"].notna().all()
    assert config.passage_prompt in used and ar_config.QUERY_PROMPT in used  # (the template's passage prompt)
    stages = sorted(r["params"]["stage"] for r in all_results(ar_train.RUNS_EXPERIMENT))
    assert stages == ["align", "compress"]  # stage 2 trained its stage 1 first
    scores = all_results(ar_scores.SCORES_EXPERIMENT)
    assert len(scores) == 2 and all(r["weights_sha256"] for r in scores)
    assert any("pair_similarities" in r for r in scores)
    # the stage-2 run records which stage-1 weights it started from: those scored as "compression only"
    stage1_model, _ = train_or_load(ar_train.run_spec(config.compress, progress=False))
    start = weights_digest(stage1_model)
    assert ar_provenance.stage1_provenance([config]) == ("All 1 stored stage-2 runs start from the same stage-1 weights "
                                              f"(sha256 {start}).")
    assert ar_provenance.stage1_provenance([config], scored_stage1=start).endswith(f"from those same weights ({start}).")
    assert "other stage-1 weights" in ar_provenance.stage1_provenance([config], scored_stage1="f" * 16)
    other = _align(tiny_dir, config.compress, steps=1, checkpoint_every=5)
    ensure_trained(ar_train.run_spec(other, progress=False))
    (record,) = [r for r in all_results(ar_train.RUNS_EXPERIMENT) if r["params"]["config"]["steps"] == 1]
    record["summary"]["initial_digest"] = "0" * 16  # as if its stage 1 had been retrained on another machine
    result_path(ar_train.RUNS_EXPERIMENT, record["params"]).write_text(json.dumps(record))
    assert "different stage-1 trainings" in ar_provenance.stage1_provenance([config, other])
    calls = len(used)
    again = ar_scores.evaluate_autoreg(config, "smoke", ["STSBenchmark", "SciFact"], eval_max_length=64, progress=False)
    assert len(used) == calls  # stored: nothing re-encoded
    assert again["main_score"].tolist() == frame["main_score"].tolist()
    untrained = ar_baselines.evaluate_untrained(tiny_dir, "smoke", ["STSBenchmark"], max_length=64, progress=False)
    assert set(untrained["method"]) == set(ar_baselines.UNTRAINED)
    # Figure 3's flat lines: methods trained on no triplet, on the page's tasks
    flat = ar_efficiency.data_efficiency_references(config, ["compression only", "PromptEOL"], "smoke", ["STSBenchmark"])
    prompteol = ar_baselines.evaluate_untrained(tiny_dir, "smoke", ["STSBenchmark"], progress=False, labels=["PromptEOL"])
    assert list(prompteol["method"]) == ["PromptEOL"]
    assert flat["PromptEOL"] == pytest.approx(ar_tables.sts_average(prompteol))
    assert np.isfinite(flat["compression only"])
    assert flat.attrs["compression only weights"] == start  # the stage 1 the stage-2 run started from
    with pytest.raises(ValueError, match="unknown reference"):
        ar_efficiency.data_efficiency_references(config, ["AutoRegEmbed"], "smoke", ["STSBenchmark"])
    with pytest.raises(ValueError, match="unknown untrained"):
        ar_baselines.evaluate_untrained(tiny_dir, "smoke", ["STSBenchmark"], labels=["PromptEOL", "echo"])


def test_command_line_builds_both_stages_and_the_no_compression_ablation():
    import argparse

    parser = argparse.ArgumentParser()
    ar_cli.add_arguments(parser)
    config = ar_cli.config_from_arguments(vars(parser.parse_args(["--steps", "7", "--compress-steps", "9",
                                                              "--squash", "tanh", "--finetune", "lora"])))
    assert isinstance(config, AlignConfig) and config.steps == 7 and config.compress.steps == 9
    assert config.compress.finetune == "lora" and config.squash == "tanh"
    ablation = ar_cli.config_from_arguments(vars(parser.parse_args(["--no-compression"])))
    assert ablation.compress is None
    stage1 = ar_cli.config_from_arguments(vars(parser.parse_args(["--stage", "compress", "--compress-lr", "1e-4"])))
    assert isinstance(stage1, CompressConfig) and stage1.lr == 1e-4


def test_printed_commands_rebuild_the_runs_they_name():
    import argparse
    import shlex
    from dataclasses import replace

    from repro.autoregembed.experiments.ablations import VARIANTS, ablation_config
    from repro.crosspaper.leaderboard_paper3 import paper3_configs

    def parsed(command):
        parser = argparse.ArgumentParser()
        ar_cli.add_arguments(parser)
        parser.add_argument("--suite")
        args = vars(parser.parse_args(shlex.split(command)[3:]))
        assert args.pop("suite") == "compact"
        return ar_cli.config_from_arguments(args)

    compress, align = paper3_configs()
    cut = AlignConfig(cut="head_tail", bos="tokenizer", compress=CompressConfig(cut="head_tail", bos="tokenizer"))
    configs = [compress, align, replace(align, compress=None), AlignConfig(), CompressConfig(template="book"),
               cut, cut.compress,
               replace(align, instruction='In one word: "x\'', lr=1e-6, max_grad_norm=0.5, seed=2),
               *(ablation_config(variant, align) for variant in VARIANTS)]
    for config in configs:
        command = ar_cli.command_for(config)
        assert parsed(command) == config, command
    assert ar_cli.command_for(AlignConfig()) == "python -m repro.autoregembed.experiments.cli --stage align --suite compact"
    assert "--template book" in ar_cli.command_for(align) and "--steps 150" in ar_cli.command_for(align)
    with pytest.raises(ValueError, match="no command-line form"):
        ar_cli.command_for(replace(align, max_grad_norm=None))


def test_objective_cost_measures_both_objectives_in_fresh_processes(tiny_dir):
    from repro.autoregembed.objective_cost import comparisons, objective_costs

    assert comparisons("contrastive", 8) == 128 and comparisons("align", 8) == 16
    costs = objective_costs([2], tiny_dir, steps=2, max_length=24)
    assert sorted(costs.objective) == ["align", "contrastive"]
    assert (costs.step_seconds > 0).all() and (costs.peak_mb_above_model >= 0).all() and (costs.model_mb > 0).all()
    again = objective_costs([2], tiny_dir, steps=2, max_length=24)  # stored: not measured twice
    assert again.step_seconds.tolist() == costs.step_seconds.tolist()


def test_page_parameters_build_both_stage_configs_and_reject_wrong_types():
    from repro.autoregembed.experiments.configs import page_configs
    from repro.autoregembed.experiments.provenance import describe_scale
    from repro.book.notebook import check_page

    good = dict(profile="smoke", backbone="smollm2-135m", suite="smoke", tasks=None, finetune="full",
                compress_steps=3, compress_max_length=64, compress_lr=5e-4, compress_data="instruction", align_steps=2, align_lr=2e-5, warmup_steps=0, batch_size=2,
                train_examples=8, validation_examples=4, validation_sts_pairs=8, validation_triplets=8, seed=1,
                template="book", methods=None, recompute=False)
    compress, base = page_configs(**check_page(good, "p3_tables"))
    assert (compress.steps, compress.max_length, base.steps, base.train_examples, base.seed) == (3, 64, 2, 8, 1)
    assert base.compress == compress and (base.template, compress.template) == ("book", "book")
    line = describe_scale(base, "smoke")
    assert "Stage 1: 3 steps x 2" in line and "Stage 2: 2 steps x 2" in line and "'smoke' suite" in line
    assert "the book's input template instead of the official code's" in line
    _, official = page_configs(**check_page(good | {"template": "official"}, "p3_tables"))
    assert official.template == official.compress.template == "official"
    assert "inputs written as the official code writes them" in describe_scale(official, "smoke")
    with pytest.raises(ValueError, match="unknown template"):
        page_configs(**check_page(good | {"template": "curly"}, "p3_tables"))
    for bad in (dict(align_lr="fast"), dict(batch_size=2.5), dict(tasks="STS12"), dict(compress_data=1)):
        with pytest.raises(TypeError, match="must be"):
            check_page(good | bad, "p3_tables")
    with pytest.raises(TypeError, match="lacks its parameter.*seed"):
        check_page({k: v for k, v in good.items() if k != "seed"}, "p3_tables")
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'seed'"):
        page_configs(**{k: v for k, v in good.items() if k != "seed"})


def test_alignment_probe_compares_stage_1_with_stage_2_on_held_out_triplets(tiny_dir, monkeypatch):
    from repro.autoregembed.probe import AFTER, BEFORE, alignment_probe, alignment_terms, quantities

    config = _align(tiny_dir, _compress(tiny_dir), steps=2)
    probe = alignment_probe(config, examples=6)
    assert list(probe.index) == ["log p(d+|e_q)", "log p(d+|e_d+)", "|a - c| (S1's distance)",
                                 "a - b (S2's margin, no reference)", "a > b"]
    assert (probe["triplets"] == 6).all() and 0 <= probe.loc["a > b", AFTER] <= 1
    # by hand, from the stage-1 model on the same held-out triplets (never the training ones)
    stage1, _ = train_or_load(ar_train.run_spec(config.compress, progress=False))
    train_rows, held = ar_data.split_align(config)
    assert not {r["query"] for r in held[:6]} & {r["query"] for r in train_rows}
    terms = alignment_terms(stage1, config, held[:6])
    assert terms.shape == (6, 4) and (terms.to_numpy() < 0).all()  # summed log-probabilities
    by_hand = quantities(terms).mean()
    for name in probe.index:
        assert probe.loc[name, BEFORE] == pytest.approx(by_hand[name], abs=1e-3), name
    assert probe.loc["log p(d+|e_q)", "change"] == pytest.approx(
        probe.loc["log p(d+|e_q)", AFTER] - probe.loc["log p(d+|e_q)", BEFORE], abs=1e-6)
    assert probe.loc["log p(d+|e_q)", "change"] != 0  # stage 2 changed the encoder
    assert set(probe["test"]) <= {"significant: increased in stage 2", "significant: decreased in stage 2",
                                  "not significant", "no difference"} | {t for t in probe["test"] if t.startswith("untestable")}
    # stored: read back without the weights
    monkeypatch.setattr(ar_probe, "train_or_load", lambda *a, **k: pytest.fail("recomputed a stored probe"))
    pd.testing.assert_frame_equal(alignment_probe(config, examples=6), probe)
    with pytest.raises(ValueError, match="compress stage"):
        alignment_probe(_align(tiny_dir, None))
    with pytest.raises(ValueError, match="positive integer"):
        alignment_probe(config, examples=0)


def test_stage1_data_profile_counts_the_examples_stage_1_draws(smollm2):
    from repro.autoregembed.experiments.stage1 import stage1_data_profile

    profile = stage1_data_profile(CompressConfig(steps=2, batch_size=4, validation_examples=4, max_length=32,
                                                 target_max_length=4))
    assert profile["examples drawn"] == 8
    assert profile["target tokens (median)"] >= 1 and profile["input tokens (median)"] >= 1
    shares = profile[[k for k in profile.index if k.startswith(("targets", "inputs"))]]
    assert ((shares >= 0) & (shares <= 1)).all()
    assert profile["inputs cut (longer than the input limit)"] > 0  # 32 tokens cut most instruction contexts


def test_page_parameter_checks_name_every_allowed_type_and_refuse_bools_for_numbers():
    from repro.core.params import check_params

    check_params(temperatures=([0.05, 1], (list, (int, float))), epochs=(1.0, (int, float)))
    with pytest.raises(TypeError, match="list of int or float"):
        check_params(temperatures=([0.05, "hot"], (list, (int, float))))
    with pytest.raises(TypeError, match="list of int"):
        check_params(sizes=([64, True], (list, int)))
    with pytest.raises(TypeError, match="must be int or float"):
        check_params(epochs=(True, (int, float)))


def test_data_efficiency_sizes_seeds_and_epochs_are_checked():
    from repro.autoregembed.experiments.data_efficiency import data_efficiency_configs

    base = AlignConfig(compress=None, backbone="x", batch_size=8)
    configs = data_efficiency_configs(base, [64, 128], [0, 1], 1.0)
    assert configs[128, 1].steps == 16 and configs[64, 0].train_examples == 64
    for sizes, seeds, epochs in (([0, 64], [0], 1.0), ([64, 64], [0], 1.0), ([64], [], 1.0), ([64], [0], 0),
                                 ([64], [True], 1.0), ([64.0], [0], 1.0)):
        with pytest.raises(ValueError, match="sizes|seeds|epochs"):
            data_efficiency_configs(base, sizes, seeds, epochs)


def test_data_efficiency_schedule_flags_runs_shorter_than_their_warm_up():
    from transformers import get_scheduler

    from repro.autoregembed.experiments.data_efficiency import data_efficiency_schedule

    table = data_efficiency_schedule(AlignConfig(compress=None, backbone="x", batch_size=8, warmup_steps=10),
                                     [64, 1024], 1.0)
    assert table.loc[64, "steps"] == 8 and not table.loc[64, "peak lr reached"]
    assert table.loc[1024, "peak lr reached"] and table.loc[1024, "highest lr used / peak"] == 1.0
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.AdamW([param], lr=1.0)
    scheduler = get_scheduler("cosine", optimizer, 10, 8)
    used = []
    for _ in range(8):
        used.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert max(used) == pytest.approx(table.loc[64, "highest lr used / peak"])


def test_adding_the_stage1_data_setting_keeps_the_keys_of_the_committed_runs():
    from pathlib import Path

    from repro.autoregembed.experiments.configs import page_configs
    from repro.autoregembed.train import run_params
    from repro.pages.parameters import page_parameters
    from repro.store.results import params_key

    committed = Path(__file__).resolve().parent.parent / "results" / "autoreg_runs"
    for page in ("p3_tables", "p3_data_efficiency"):
        params = page_parameters(page, "standard")
        compress, base = page_configs(**{k: params[k] for k in PAGE_KEYS} | {"recompute": False})
        for config in (compress, base):  # stored before the setting existed: the same key now
            assert (committed / f"{params_key(run_params(config))}.json").is_file(), (page, config)
        autoencode = CompressConfig(**(vars(compress) | {"data": "autoencode"}))
        assert params_key(run_params(autoencode)) != params_key(run_params(compress))
        assert run_params(AlignConfig(**(vars(base) | {"compress": autoencode})))["config"]["compress"]["data"] == \
            "autoencode"


PAGE_KEYS = ("profile", "backbone", "suite", "finetune", "compress_steps", "compress_max_length", "compress_lr",
             "compress_data", "align_steps", "align_lr", "warmup_steps", "batch_size", "train_examples",
             "validation_examples", "validation_sts_pairs", "validation_triplets", "seed")


def test_stage1_can_autoencode_wikipedia_paragraphs(tiny_dir, tmp_path):
    rows = ar_data.read_stage1("autoencode")
    assert len(rows) > 1000 and all(r["output"] == r["context"] and not r["instruction"] for r in rows[:50])
    assert rows == ar_data.read_stage1("autoencode")  # a fixed shuffle: the same held-out paragraphs every time
    with pytest.raises(ValueError, match="unknown stage-1 data"):
        CompressConfig(data="books")
    with pytest.raises(ValueError, match="unknown stage-1 data"):
        ar_data.read_stage1("books")
    config = _compress(tiny_dir, data="autoencode", steps=1)
    run = train_compression(config, tmp_path / "c", progress=False)
    assert run["examples_seen"] == config.batch_size and run["history"][0]["validation_loss"] > 0
    model, loaded = load_encoder(tmp_path / "c" / "final")
    assert loaded == config and loaded.data == "autoencode"


@pytest.mark.parametrize("divergence", ["logprob", "js"])
@pytest.mark.parametrize("strategy", [0, 4])
def test_fused_passes_give_the_same_loss_and_gradients(tiny_dir, divergence, strategy):
    from repro.autoregembed.model import TextIds, build_autoreg
    from repro.autoregembed.objectives import align_batch, reference_terms

    rows = [{"query": "A man is playing a guitar.", "positive": "A man plays.", "negative": "The cat sat."},
            {"query": "Rain is expected tomorrow in the north.", "positive": "Rain tomorrow.",
             "negative": "Stock markets fell sharply on Monday."}]
    results = []
    for fused in (False, True):
        config = _align(tiny_dir, _compress(tiny_dir), strategy=strategy, divergence=divergence, fused=fused)
        model = build_autoreg(config)
        texts = TextIds(model.backbone.tokenizer, config.max_length, config.target_max_length)
        batch = align_batch(texts, rows, config, "cpu")
        batch["reference"] = {term: torch.tensor([-3.0, -4.0]) for term in reference_terms(strategy)}
        loss = model(batch)
        loss.backward()
        results.append((loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    (plain, g1), (fused_loss, g2) = results
    torch.testing.assert_close(fused_loss, plain, atol=1e-5, rtol=1e-5)
    assert g1.keys() == g2.keys() and g1
    for name in g1:
        torch.testing.assert_close(g2[name], g1[name], atol=1e-5, rtol=1e-4, msg=name)


def test_new_runs_write_their_inputs_as_the_official_code_and_the_earlier_runs_keep_their_keys(tiny_dir):
    from repro.autoregembed.config import NEXT_INSTRUCTION, OFFICIAL_INSTRUCTION, with_template
    from repro.autoregembed.model import TextIds
    from repro.core.prompts import PROMPTS
    from repro.store.identity import config_from_identity, config_identity

    assert OFFICIAL_INSTRUCTION.endswith("\u201c") and PROMPTS["autoregembed-passage-official"].template.endswith("\u201c")
    assert "autoregembed-query" not in PROMPTS  # the unused prompt that claimed to be official is gone
    # new runs: the official template (curly quote, no inference newline, the official passage prompt)
    official = _align(tiny_dir, _compress(tiny_dir))
    assert (official.template, official.compress.template) == ("official", "official")
    assert (official.instruction, official.inference_newline, official.passage_prompt) == (
        OFFICIAL_INSTRUCTION, False, "autoregembed-passage-official")
    identity = config_identity(official)
    assert identity["template"] == identity["compress"]["template"] == "official"
    # the earlier runs: the book's template is left out of the identity, so their stored keys are unchanged
    book = _align(tiny_dir, _compress(tiny_dir, template="book"), template="book")
    assert (book.instruction, book.inference_newline, book.passage_prompt) == (NEXT_INSTRUCTION, True,
                                                                              "autoregembed-passage")
    stored = config_identity(book)
    assert "template" not in stored and "template" not in stored["compress"] and "inference_newline" not in stored
    assert stored["instruction"] == NEXT_INSTRUCTION
    assert config_from_identity(AlignConfig, stored) == book  # a stored identity loads as the book's run
    assert with_template(book, "official") == official and with_template(official, "book") == book
    # the book's template keeps its inference options; the official one has its own
    assert config_identity(_align(tiny_dir, _compress(tiny_dir, template="book"), template="book",
                                  inference_newline=False))["inference_newline"] is False
    with pytest.raises(ValueError, match="official template has its own inference"):
        _align(tiny_dir, _compress(tiny_dir), inference_newline=True)
    with pytest.raises(ValueError, match="template"):
        _align(tiny_dir, _compress(tiny_dir, template="book"))  # stage 2's template differs from stage 1's
    with pytest.raises(ValueError, match="unknown template"):
        _compress(tiny_dir, template="offical")
    with pytest.raises(ValueError, match="unknown prompt"):
        _align(tiny_dir, _compress(tiny_dir, template="book"), template="book", passage_prompt="nope")

    tok = tiny_backbone("llama").tokenizer
    ids = lambda text: tok(text, add_special_tokens=False).input_ids  # noqa: E731
    bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    texts = TextIds(tok, 64, 32, "official")
    # training: [BOS] + tok(text + "\\n") + tok(instruction + "\\n"), each piece on its own (both stages)
    assert texts.stage2_input("A man plays.", OFFICIAL_INSTRUCTION) == [bos] + ids("A man plays.\n") + ids(
        OFFICIAL_INSTRUCTION + "\n")
    assert texts.stage1_input("Some context.", "") == [bos] + ids("Some context.\n") + ids("\n")
    long = " ".join(["word"] * 200)  # the text is cut on the right; the instruction is kept whole
    cut = texts.stage2_input(long, OFFICIAL_INSTRUCTION)
    assert len(cut) == 64 and cut[-len(ids(OFFICIAL_INSTRUCTION + "\n")):] == ids(OFFICIAL_INSTRUCTION + "\n")
    assert cut[1:4] == ids(long)[:3]
    # cut="head_tail": a long training input keeps its head and its tail (the question T0's prompts put last)
    question = " ".join(["word"] * 200) + " Which one?"
    kept = TextIds(tok, 64, 32, "official", "head_tail").stage2_input(question, OFFICIAL_INSTRUCTION)
    assert len(kept) == 64 and kept[:4] == [bos] + ids(question)[:3]
    assert kept[:-len(ids(OFFICIAL_INSTRUCTION + "\n"))][-len(ids(" Which one?\n")):] == ids(" Which one?\n")
    assert TextIds(tok, 64, 32, "official", "right").stage2_input(question, OFFICIAL_INSTRUCTION) == texts.stage2_input(
        question, OFFICIAL_INSTRUCTION)
    # bos="tokenizer": BOS only where the tokenizer adds one, in training and at inference
    plain = TextIds(tok, 64, 32, "official", bos="tokenizer")
    own = [tok.bos_token_id] if tok("a").input_ids[:1] == [tok.bos_token_id] else []
    assert plain.stage2_input("A man plays.", OFFICIAL_INSTRUCTION) == own + ids("A man plays.\n") + ids(
        OFFICIAL_INSTRUCTION + "\n")
    assert plain.inference_input("A man plays.", "autoregembed-instruction", OFFICIAL_INSTRUCTION) == own + ids(
        "A man plays.\n" + OFFICIAL_INSTRUCTION)
    assert len(plain.inference_input(long, "autoregembed-instruction", OFFICIAL_INSTRUCTION)) == 64
    assert config_identity(_compress(tiny_dir, bos="tokenizer"))["bos"] == "tokenizer"
    assert "bos" not in config_identity(_compress(tiny_dir))
    with pytest.raises(ValueError, match="unknown bos"):
        _compress(tiny_dir, bos="never")
    with pytest.raises(ValueError, match="BOS only where the tokenizer adds one"):
        _compress(tiny_dir, template="book", bos="always")
    assert config_identity(_compress(tiny_dir, cut="head_tail"))["cut"] == "head_tail"
    assert "cut" not in config_identity(_compress(tiny_dir))  # the default leaves every stored key as it was
    with pytest.raises(ValueError, match="unknown cut"):
        _compress(tiny_dir, cut="left")
    with pytest.raises(ValueError, match="keeps the head and the tail"):
        _compress(tiny_dir, template="book", cut="right")
    # inference: the filled template in one call, BOS first, cut on the right, no newline before the tokens
    filled = "A man plays.\n" + OFFICIAL_INSTRUCTION
    assert texts.inference_input("A man plays.", "autoregembed-instruction", OFFICIAL_INSTRUCTION) == [bos] + ids(filled)
    assert texts.inference_input(long, "autoregembed-instruction", OFFICIAL_INSTRUCTION) == [bos] + ids(long)[:63]
    assert texts.inference_input("", "autoregembed-instruction", OFFICIAL_INSTRUCTION) == [bos] + ids(
        "\n" + OFFICIAL_INSTRUCTION)
    with pytest.raises(TypeError, match="texts must be str"):
        texts.inference_input(None, "autoregembed-instruction", OFFICIAL_INSTRUCTION)
    # the book's template: unchanged (the training newline, kept or left out at inference)
    earlier = TextIds(tok, 64, 32)
    with_newline = earlier.encoder("A man plays.", "autoregembed-instruction", OFFICIAL_INSTRUCTION)
    without = earlier.inference_input("A man plays.", "autoregembed-instruction", OFFICIAL_INSTRUCTION, newline=False)
    assert with_newline == without + earlier.newline
    assert earlier.stage2_input("A man plays.", NEXT_INSTRUCTION) == earlier.encoder(
        "A man plays.", "autoregembed-instruction", NEXT_INSTRUCTION)


def test_under_the_budget_rule_stage_2_scores_its_reference_block_by_block_from_the_initial_model(tiny_dir, tmp_path):
    compress = _compress(tiny_dir)
    train_compression(compress, tmp_path / "c", progress=False)
    config = _align(tiny_dir, compress, steps=10, eval_every=2, checkpoint_every=2, stopping="dev",
                    schedule="constant_with_warmup", data="nli-medi", fused=True)
    summary = train_alignment(config, tmp_path / "a", tmp_path / "c" / "final", progress=False)
    assert summary["cap"] == 10 and summary["selected_step"] in {r["step"] for r in summary["history"]}
    reference = torch.load(tmp_path / "a" / "reference.pt")
    # blocks: the first 20% of the cap, then one evaluation interval at a time, never past what the run drew
    trained = summary["steps"]
    assert trained <= reference["steps"] <= min(trained + config.eval_every, config.steps)
    assert sorted(reference["index"]) == ar_objectives.seen_indices(32, config, reference["steps"])
    # every block (after the first, from a rebuilt initial model) equals the initial model's scores at once
    initial = build_autoreg(config)
    ar_train._load_encoder_weights(initial, tmp_path / "c" / "final")
    texts = TextIds.of(initial.backbone.tokenizer, config)
    rows, _ = ar_data.split_align(config)
    once = ar_objectives.reference_scores(initial, texts, [rows[i] for i in reference["index"]], config)
    for term, values in once.items():
        torch.testing.assert_close(reference["scores"][term], values, atol=1e-4, rtol=1e-5)
    with pytest.raises(ValueError, match="unknown stopping"):
        _align(tiny_dir, compress, stopping="early")
    assert ar_baselines.contrastive_config("mean, in-batch", config).data == "nli-medi"
    baseline = ar_baselines.contrastive_config("mean, in-batch", config)
    assert (baseline.stopping, baseline.steps, baseline.eval_every, baseline.packing) == ("dev", 10, 25, True)


def test_the_declared_search_adds_its_second_phase_at_the_dev_best_learning_rate(monkeypatch):
    from repro.autoregembed.experiments import search

    base = search.base_config()
    assert (base.steps, base.eval_every, base.validation_sts_pairs, base.schedule, base.data, base.batch_size) == \
        (300, 25, 1500, "constant_with_warmup", "nli-medi", 8)
    stored: dict = {}
    monkeypatch.setattr(search, "_record", lambda config: stored.get(json.dumps(
        config.identity() if hasattr(config, "identity") else ar_train.run_params(config), sort_keys=True)))

    def store(config, signal, step=50):
        history = [{"step": 0, "validation_sts": 68.0}, {"step": step, "validation_sts": signal}]
        key = config.identity() if hasattr(config, "identity") else ar_train.run_params(config)
        stored[json.dumps(key, sort_keys=True)] = {"rows": history, "summary": {  # the stored record's shape
            "selected_signal": max(68.0, signal), "selected_step": step if signal > 68 else 0,
            "steps": 75, "stopped_early": True, "selected_examples_seen": 400, "train_cpu_seconds": 3600.0}}

    first = search.search_configs("autoregembed", base)
    assert list(first) == ["lr 1e-06", "lr 2e-06", "lr 5e-06"]  # phase 2 waits for phase 1's records
    for config, signal in zip(first.values(), [69.5, 70.1, 66.0]):
        store(config, signal)
    both = search.search_configs("autoregembed", base)
    assert list(both)[3:] == ["JS divergence, lr 2e-06", "LoRA, lr 0.0001"]
    assert both["JS divergence, lr 2e-06"].divergence == "js" and both["LoRA, lr 0.0001"].compress.finetune == "lora"
    with pytest.raises(LookupError, match="not complete"):
        search.selected_config("autoregembed", base)
    store(both["JS divergence, lr 2e-06"], 71.0)
    store(both["LoRA, lr 0.0001"], 60.0)
    assert search.selected_config("autoregembed", base) == both["JS divergence, lr 2e-06"]
    baselines = search.search_configs("baseline", base)
    assert [c.lr for c in baselines.values()] == [5e-5, 1e-4, 2e-4]
    assert all(c.data == "nli-medi" and c.steps == 300 and c.stopping == "dev" for c in baselines.values())
    table = search.search_table(base)
    assert table["stored"].sum() == 5 and table.loc[table["selected by dev"], "run"].tolist() == \
        ["JS divergence, lr 2e-06"]
    with pytest.raises(ValueError, match="unknown search side"):
        search.search_configs("both", base)
    with pytest.raises(ValueError, match="budget rule"):
        search.search_configs("autoregembed", AlignConfig())


def test_the_filter_on_autoregembeds_encoder_scores_both_sides_from_one_run_without_re_encoding(tiny_dir,
                                                                                               monkeypatch):
    from repro.core.scoring import stored_per_task
    from repro.crosspaper import combinations

    calls = []
    original = ar_model.embed_texts

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(ar_model, "embed_texts", spy)
    config = _align(tiny_dir, _compress(tiny_dir), steps=2, checkpoint_every=5)
    ensure_trained(ar_train.run_spec(config, progress=False))
    tasks = ["STSBenchmark", "SciFact"]
    frame = combinations.evaluate_autoreg_filter(suite="smoke", config=config, tasks=tasks, progress=False)
    assert len(frame) >= 4 and frame["main_score"].notna().all()
    encoded = len(calls)
    sides = [stored_per_task(ar_scores.SCORES_EXPERIMENT, combinations.autoreg_identity(config, v), "smoke", tasks)
             for v in (None, "edge/2")]
    assert all(len(side) == len(tasks) for side in sides)
    assert {r["weights_sha256"] for side in sides for r in side.values()} == {sides[0]["SciFact"]["weights_sha256"]}
    assert sides[0]["STSBenchmark"]["pair_similarities"] != sides[1]["STSBenchmark"]["pair_similarities"]
    combinations.evaluate_autoreg_filter(suite="smoke", config=config, tasks=tasks, progress=False)
    assert len(calls) == encoded  # stored: nothing encoded again
    other = combinations.evaluate_autoreg_filter(suite="smoke", variant="edge/4", config=config, tasks=tasks,
                                                 progress=False)
    assert len(calls) == encoded and other["main_score"].notna().all()  # a new filter reads the cached embeddings


@pytest.mark.parametrize("finetune", ["full", "lora"])
def test_packed_stage1_step_has_the_padded_loss_and_gradients(tiny_dir, finetune):
    """The padding-free packed stage-1 step (one packed encoder and one packed decoder forward, lm_head only on
    real target positions) gives the padded step's loss and every gradient."""
    from repro.autoregembed.data import read_instructions
    from repro.autoregembed.train import compress_batch

    config = _compress(tiny_dir, finetune=finetune, template="official", cut="head_tail", bos="tokenizer",
                       max_length=160, target_max_length=24)
    model = build_autoreg(config)
    texts = TextIds.of(model.backbone.tokenizer, config)
    rows = read_instructions()[:6]
    results = {}
    for packed in (False, True):
        model.zero_grad()
        loss = model(compress_batch(texts, rows, "cpu", packed=packed))
        loss.backward()
        results[packed] = loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    (padded_loss, padded_grads), (packed_loss, packed_grads) = results[False], results[True]
    torch.testing.assert_close(packed_loss, padded_loss, atol=1e-5, rtol=1e-5)
    assert set(packed_grads) == set(padded_grads) and "compression" in packed_grads
    for name, grad in padded_grads.items():
        torch.testing.assert_close(packed_grads[name], grad, atol=1e-5, rtol=1e-3)
    # lengths differ inside the batch (else packing would test nothing)
    lengths = {len(texts.stage1_input(r["context"], r["instruction"])) for r in rows}
    assert len(lengths) > 1


def test_stage1_under_the_rule_stops_on_its_loss_and_records_dev(tiny_dir, tmp_path):
    from dataclasses import replace

    from repro.autoregembed.experiments.independent import PRINCIPLED, stage1_config
    from repro.training import budget

    config = stage1_config(1, backbone=tiny_dir, cap=4)
    assert (config.template, config.cut, config.bos) == tuple(PRINCIPLED.values())
    assert config.stop_signal == "validation_loss" and config.schedule == "constant_with_warmup"
    small = replace(config, eval_every=2, checkpoint_every=2, validation_sts_pairs=8, validation_examples=4,
                    max_length=48, target_max_length=12)
    summary = train_compression(small, tmp_path / "run", progress=False)
    evaluated = [r for r in summary["history"] if "validation_loss" in r]
    steps = [r["step"] for r in evaluated]
    assert steps in ([0, 2], [0, 2, 4])
    # it stopped early exactly when the rule, read on its held-out loss, says so
    assert summary["stopped_early"] == (steps == [0, 2])
    assert summary["stopped_early"] == budget.should_stop(summary["history"][:4], 4, budget.LOSS_SIGNAL)
    assert all(math.isfinite(r["validation_sts"]) for r in evaluated)
    best = min(evaluated, key=lambda r: r["validation_loss"])
    assert summary["selected_step"] == best["step"] and summary["selected_signal"] == best["validation_loss"]
    # seeds are independent stage 1s: distinct data order, distinct weights
    assert stage1_config(0, backbone=tiny_dir, cap=4) != config
    with pytest.raises(ValueError, match="stop_signal"):
        replace(config, stop_signal="dev_loss")
    assert budget.signal_of(config) == budget.LOSS_SIGNAL


@pytest.mark.integration
@pytest.mark.parametrize("name, first", [("gemma3-270m", "<bos>"), ("smollm2-135m", None)])
def test_the_principled_template_on_the_real_tokenizers_puts_their_own_bos_first_and_no_chat_token(name, first):
    """Issue 52's gemma3 check: under the principled template (official pieces, head-tail cut, the tokenizer's own
    BOS) gemma3's inputs start with its ``<bos>`` exactly once, SmolLM2's with no BOS and never its chat token."""
    from transformers import AutoTokenizer

    from repro.autoregembed.experiments.independent import PRINCIPLED
    from repro.core.backbones import PACKAGED, converted_folder

    tok = AutoTokenizer.from_pretrained(converted_folder(PACKAGED[name]))
    ids = ar_model.TextIds(tok, 160, 64, PRINCIPLED["template"], PRINCIPLED["cut"], PRINCIPLED["bos"])
    long = " ".join(["word"] * 400)  # cut: the head and the tail kept
    for sequence in (ids.stage1_input(long, "Continue the text."), ids.stage2_input("a query", "Answer it."),
                     ids.inference_input("a sentence", "autoregembed-passage-official")):
        tokens = tok.convert_ids_to_tokens(sequence)
        assert "<|im_start|>" not in tokens
        if first is None:
            assert sequence[0] != tok.bos_token_id  # SmolLM2 adds no BOS of its own
        else:
            assert tokens[0] == first and tokens.count(first) == 1
    assert len(ids.stage1_input(long, "Continue the text.")) <= 160
