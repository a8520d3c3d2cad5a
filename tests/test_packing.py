"""Padding-free packing gives the padded forward's embeddings, losses and gradients; the budget rule stops,
selects and resumes as declared; the declared training mixes."""

import json

import numpy as np
import pytest
import torch
from conftest import tiny_backbone

from repro.training import budget
from repro.training import contrastive as train_module
from repro.training.contrastive import EmbeddingModel, TrainConfig, train
from repro.training.data import pad_right, read_triplets
from repro.training.heads import MODELS, make_head
from repro.training.lora import add_lora
from repro.training.objective import batch_embeddings, info_nce
from repro.training.packing import assign_rows, pack

SEQUENCES = [list(range(3, 3 + n)) for n in (5, 9, 2, 7, 11, 4, 1, 6)]


def test_rows_hold_at_most_their_budget_and_every_sequence_once():
    lengths = [len(s) for s in SEQUENCES]
    rows = assign_rows(lengths, 12)
    assert sorted(i for r in rows for i in r) == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in r) <= 12 for r in rows)
    packed = pack(SEQUENCES, 0, causal=True, row_tokens=12)
    assert packed.tokens == sum(lengths) and packed.ids.shape[0] == len(rows)
    for i, seq in enumerate(SEQUENCES):  # ids and restarted positions where the layout says
        r, s = int(packed.row[i]), int(packed.start[i])
        assert packed.ids[r, s:s + len(seq)].tolist() == seq
        assert packed.positions[r, s:s + len(seq)].tolist() == list(range(len(seq)))
    with pytest.raises(ValueError, match="empty"):
        pack([[1], []], 0, True)


@pytest.mark.parametrize("arch", ["llama", "qwen2", "gemma3"])
@pytest.mark.parametrize("number", sorted(MODELS))
def test_packed_forward_gives_the_padded_embeddings_and_gradients(arch, number):
    """In float64, so that the check is about the math and not about float32 rounding: summation order differs
    between the two layouts, and in float32 that alone moves gemma3's large LoRA gradients (|g| up to ~8) by
    ~2e-5 on some CPUs. In float64 both paths agree to ~1e-15 relative, so the tolerances are far tighter."""
    spec = MODELS[number]
    backbone = tiny_backbone(arch, spec.attention)
    backbone.model = add_lora(backbone.model, 4, 8, 0.0)
    backbone.set_attention(spec.attention)
    torch.manual_seed(1)
    for name, p in backbone.model.named_parameters():  # LoRA B starts at 0: make the adapters matter
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.1)
    model = EmbeddingModel(backbone, spec, make_head(spec, 32, backbone.num_layers, latents=4, heads=4))
    model = model.to(torch.float64)
    ids, mask = pad_right(SEQUENCES, 0)
    grads = []
    for packed in (None, pack(SEQUENCES, 0, spec.attention == "causal", row_tokens=16)):
        model.zero_grad()
        out = model(ids, mask) if packed is None else model(packed=packed)
        loss = info_nce(out[:3], out[3:6], out[6:], 0.05)
        loss.backward()
        grads.append((out.detach(), loss.detach(),
                      {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    (a, la, ga), (b, lb, gb) = grads
    assert a.dtype == torch.float64
    torch.testing.assert_close(b, a, atol=1e-12, rtol=1e-10)
    torch.testing.assert_close(lb, la, atol=1e-12, rtol=1e-10)
    assert ga.keys() == gb.keys() and len(ga) > 0
    for name in ga:
        torch.testing.assert_close(gb[name], ga[name], atol=1e-10, rtol=1e-9, msg=name)


def test_budget_rule_on_a_loss_stops_when_it_no_longer_falls():
    def history(values, every=30):
        return [{"step": i * every, "validation_loss": v} for i, v in enumerate(values)]

    cap = 600  # window: the last 120 steps; a loss must fall by at least MIN_LOSS_GAIN below the best before it
    falling = history([11.8, 8.0, 6.0, 5.5, 5.2, 5.0])
    assert not budget.should_stop(falling, cap, budget.LOSS_SIGNAL)
    flat = history([11.8, 8.0, 6.0, 5.5, 5.2, 5.17, 5.19, 5.16, 5.18])  # (120, 240] best 5.16 > 5.2 - 0.05
    assert budget.should_stop(flat, cap, budget.LOSS_SIGNAL)
    assert budget.select(flat, budget.LOSS_SIGNAL) == (210, 5.16)  # the lowest loss
    assert not budget.should_stop(history([11.8, 8.0, 6.0, 5.5, 5.2, 5.17, 5.19, 5.16, 5.14]), cap, budget.LOSS_SIGNAL)
    with pytest.raises(ValueError, match="unknown stopping signal"):
        budget.should_stop(flat, cap, "train_loss")


def test_budget_rule_stops_on_a_flat_dev_signal_and_selects_the_earliest_best():
    def history(values, every=30):
        return [{"step": i * every, "validation_sts": v} for i, v in enumerate(values)]

    cap = 600  # window: the last 120 steps (4 evaluations)
    rising = history([28, 34, 78, 80.2, 80.28])  # step 120: the window (0, 120] is far above step 0
    assert not budget.should_stop(rising, cap)
    plateau = history([28, 34, 78, 80.2, 80.28, 80.5, 80.6, 80.69])  # step 210: (90, 210] best 80.69 < 80.2 + 0.5
    assert budget.should_stop(plateau, cap) and not budget.should_stop(plateau[:-1], cap)
    assert not budget.should_stop(history([28, 34, 78, 80.2, 80.28, 80.5, 80.6, 80.7]), cap)  # a 0.5 gain
    falling = history([68, 64, 60, 59, 58])  # step 120: the window never rose above step 0
    assert budget.should_stop(falling, cap) and budget.select(falling) == (0, 68)
    assert not budget.should_stop(falling[:4], cap)  # before 20% of the cap, nothing stops
    assert budget.select(history([1, 5, 5, 3])) == (30, 5)
    assert budget.eval_interval(600) == 30 and budget.eval_interval(100) == 25
    assert budget.budget_points(270, range(0, 301, 30)) == [30, 60, 120, 240, 270]
    assert budget.budget_points(0, range(0, 151, 30)) == [30, 60, 120]  # step 0 selected: never a budget point
    assert budget.budget_points(600, range(0, 601, 30)) == [30, 60, 120, 240, 480, 600]
    assert budget.grid(30, 600) == [30, 60, 120, 240, 480] and budget.grid(30, 29) == []
    # snapshots kept while a run goes: the grid's evaluated steps and the best so far
    assert budget.snapshots_to_keep(history([28, 34, 78, 80.2, 80.28, 80.1]), 30, cap) == {30, 60, 120}
    assert budget.snapshots_to_keep(falling, 30, cap) == {0, 30, 60, 120}
    for bad in ({"stopping": "early"}, {"schedule": "cosine_decay"}):
        with pytest.raises(ValueError, match="unknown (stopping|schedule)"):
            TrainConfig(**bad)


def test_the_declared_mixes_mark_pairs_without_a_hard_negative():
    mix = read_triplets("mix")
    sources = {r["source"] for r in mix}
    assert sources == {"nli_triplets", "medi_nli", "mrpc_pairs", "qa_pairs"}
    assert all((r["negative"] is None) == (r["source"] in ("mrpc_pairs", "qa_pairs")) for r in mix)
    assert {r["source"] for r in read_triplets("nli-medi")} == {"nli_triplets", "medi_nli"}
    assert not any("scifact" in s.lower() for s in sources)
    with pytest.raises(ValueError, match="unknown training data"):
        read_triplets("scifact")


def test_a_mixed_batch_scores_pairs_against_the_other_documents_only(tiny_dir):
    config = TrainConfig(backbone=tiny_dir, model=1, lora_dropout=0.0, packing=True, max_length=24)
    model = train_module.build_model(config)
    collate = train_module.Collator(model.backbone.tokenizer, config)
    rows = [{"query": "a man", "positive": "a guy", "negative": "a cat"},
            {"query": "rain", "positive": "wet weather", "negative": None},
            {"query": "stocks fell", "positive": "markets dropped", "negative": "markets rose"}]
    q, p, n, has, _ = batch_embeddings(model, collate, rows, True, "cpu")
    assert has.tolist() == [True, False, True] and float(n[1].detach().abs().sum()) == 0
    loss = info_nce(q, p, n, 0.05, has)
    logits = q @ torch.cat([p, n[[0, 2]]]).T / 0.05
    expected = torch.nn.functional.cross_entropy(logits, torch.arange(3))
    torch.testing.assert_close(loss, expected)
    padded = batch_embeddings(model, collate, rows, False, "cpu")
    torch.testing.assert_close(padded[0], q, atol=1e-5, rtol=1e-5)


def test_a_dev_stopped_run_selects_its_best_snapshot_records_its_budget_and_resumes(tiny_dir, tmp_path, monkeypatch):
    values = iter([10.0, 20.0, 25.0, 24.0, 24.9, 24.8, 24.7, 30.0, 31.0])
    monkeypatch.setattr(train_module, "validation_sts", lambda *a, **k: next(values))
    config = TrainConfig(backbone=tiny_dir, model=1, steps=40, batch_size=4, validation_triplets=0, max_length=24,
                         lora_dropout=0.0, warmup_steps=1, eval_every=2, checkpoint_every=2, packing=True,
                         schedule="constant_with_warmup", stopping="dev", data="mix")
    summary = train(config, tmp_path / "run", progress=False)
    # cap 40: the window is the last 8 steps; evaluations every 2 steps: at step 12 the window (4, 12] holds at
    # best 24.9 < 25 (step 4) + 0.5: stop
    assert summary["steps"] == 12 and summary["stopped_early"] and summary["cap"] == 40
    assert summary["selected_step"] == 4 and summary["selected_signal"] == 25.0
    assert summary["selected_examples_seen"] == 16 and 0 < summary["selected_tokens_seen"] < summary["tokens_seen"]
    assert summary["train_cpu_seconds"] > 0
    lrs = [r["lr"] for r in summary["history"] if "lr" in r]
    assert len(set(lrs[1:])) == 1  # constant after warm-up
    # kept: the doubling grid of evaluated steps (2, 4, 8) and the selected step; the other snapshots deleted
    kept = sorted(p.name for p in (tmp_path / "run" / "snapshots").iterdir())
    assert kept == ["step-00002.pt", "step-00004.pt", "step-00008.pt"]
    snapshot = torch.load(tmp_path / "run" / "snapshots" / "step-00004.pt")
    final = train_module.load_trained(tmp_path / "run" / "final")[0]
    params = dict(final.named_parameters())
    for name, value in snapshot.items():
        torch.testing.assert_close(params[name], value)
    # a finished, stopped run resumes as finished: no more steps, same selection
    again = train(config, tmp_path / "run", progress=False)
    assert again["steps"] == 12 and again["selected_step"] == 4
    assert json.loads((tmp_path / "run" / "train_state.json").read_text())["stopped"]
    assert np.isfinite(summary["history"][0]["validation_sts"])


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
@pytest.mark.parametrize("number", sorted(MODELS))
def test_merged_adapters_give_the_same_embeddings_and_leave_the_trained_model_alone(arch, number):
    """Dev evaluation and scoring encode with the adapters merged into a copy (``merged_for_inference``): the same
    embeddings as the unmerged model in float64 (padded and packed), plain linear layers in the copy, and the
    trained model's parameters and adapters unchanged (training goes on from it)."""
    from peft import PeftModel
    from peft.tuners.lora import LoraLayer

    from repro.training.lora import merged_for_inference

    spec = MODELS[number]
    backbone = tiny_backbone(arch, spec.attention)
    backbone.model = add_lora(backbone.model, 4, 8, 0.0)
    backbone.set_attention(spec.attention)
    torch.manual_seed(2)
    for name, p in backbone.model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.1)
    model = EmbeddingModel(backbone, spec, make_head(spec, 32, backbone.num_layers, latents=4, heads=4))
    model = model.to(torch.float64).eval()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    merged = merged_for_inference(model)
    assert not any(isinstance(m, LoraLayer) for m in merged.modules())
    assert not isinstance(merged.backbone.model, PeftModel) and merged.lm is merged.backbone.model
    ids, mask = pad_right(SEQUENCES, 0)
    packed = pack(SEQUENCES, 0, spec.attention == "causal", row_tokens=16)
    with torch.no_grad():
        for a, b in ((model(ids, mask), merged(ids, mask)), (model(packed=packed), merged(packed=packed))):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=0, atol=1e-12)
    assert isinstance(model.backbone.model, PeftModel) and model.lm is model.backbone.model
    after = dict(model.named_parameters())
    assert before.keys() == after.keys()
    for name, value in before.items():
        assert torch.equal(value, after[name]), name
    # an unmerged copy would not differ from the model: the check above is not vacuous
    ones = {n: p for n, p in model.named_parameters() if "lora_B" in n}
    with torch.no_grad():
        next(iter(ones.values())).add_(1.0)
        assert float((model(ids, mask) - merged(ids, mask)).abs().max()) > 1e-6


def test_merging_is_skipped_without_adapters_or_off_the_cpu(monkeypatch):
    from repro.training.lora import merged_for_inference

    spec = MODELS[1]
    plain = EmbeddingModel(tiny_backbone("llama"), spec, None)
    assert merged_for_inference(plain) is plain  # no adapters: nothing to merge
    backbone = tiny_backbone("llama")
    backbone.model = add_lora(backbone.model, 4, 8, 0.0)
    model = EmbeddingModel(backbone, spec, None)
    assert merged_for_inference(model) is not model
    meta = torch.nn.Parameter(torch.zeros(1, device="meta"))  # a parameter off the CPU, first in line
    monkeypatch.setattr(EmbeddingModel, "parameters", lambda self, recurse=True: iter([meta]))
    assert merged_for_inference(model) is model
