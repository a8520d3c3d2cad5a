import numpy as np
import pytest
import torch

from repro.core import encode as encode_module
from repro.core.encode import EncodeConfig, Tokenizer, count_tokens, encode
from repro.core.prompts import PROMPTS, get_prompt
from repro.core.tokenization import MAX_CHARS_PER_TOKEN

TEXTS = ["A man is playing a guitar.", "The cat sat on the mat.", "Rain tomorrow.", "A woman slices a tomato."]
NASTY = ["", "   \t ", "x" * 100_000, "ctrl \x00\x07\x1b chars", "中文 测试", "emoji 😀🎉", "normal text"]


def _manual(backbone, text, config):
    """Reference: one text alone, unpadded, pooled by hand."""
    item = Tokenizer(backbone.tokenizer, get_prompt(config.prompt), config)(text)
    ids = torch.tensor([item.ids])
    with torch.no_grad():
        hs = backbone.hidden_states(ids, torch.ones_like(ids))
    last = torch.stack([h[0, -1] for h in hs]).numpy()
    mean = torch.stack([h[0, item.mean_start:].mean(0) for h in hs]).numpy()
    return last, mean


@pytest.mark.parametrize("prompt", ["none", "prompteol", "echo"])
def test_batched_pooling_matches_unpadded_single_forward(tiny, prompt):
    config = EncodeConfig(prompt=prompt)
    states = encode(tiny, TEXTS + ["a much longer sentence that forces padding " * 5], config, cache=False,
                    progress=False)
    for i, text in enumerate(TEXTS):
        last, mean = _manual(tiny, text, config)
        np.testing.assert_allclose(states["last"][:, i], last, atol=1e-5)
        np.testing.assert_allclose(states["mean"][:, i], mean, atol=1e-5)


def test_one_decoder_forward_per_batch_and_no_lm_head(tiny):
    forwards, heads = [], []
    tiny.decoder.register_forward_hook(lambda *a: forwards.append(1))
    tiny.model.lm_head.register_forward_hook(lambda *a: heads.append(1))
    states = encode(tiny, TEXTS, EncodeConfig(), cache=False, progress=False)
    assert states["last"].shape == (tiny.num_layers + 1, len(TEXTS), tiny.hidden_size)
    assert len(forwards) == 1 and heads == []


def test_echo_mean_pools_the_second_copy_and_eos(tiny):
    config = EncodeConfig(prompt="echo")
    tok = Tokenizer(tiny.tokenizer, get_prompt("echo"), config)
    item = tok("the cat")
    second_literal = tok.literals[1]
    text_ids = tiny.tokenizer("the cat", add_special_tokens=False).input_ids
    # span = second copy of the text + the final literal (none) + EOS
    assert item.ids[item.mean_start:] == text_ids + [tiny.tokenizer.eos_token_id]
    assert item.ids[item.mean_start - len(second_literal):item.mean_start] == second_literal


def test_truncation_keeps_the_prompt_and_respects_max_length(tiny):
    long_text = " ".join(f"w{i}" for i in range(3000))
    for prompt in ("prompteol", "echo", "none"):
        for how in ("head", "head_tail"):
            config = EncodeConfig(prompt=prompt, max_length=64, truncation=how)
            tok = Tokenizer(tiny.tokenizer, get_prompt(prompt), config)
            item = tok(long_text)
            assert len(item.ids) <= 64
            suffix = tok.literals[-1] + tok.eos
            assert item.ids[len(item.ids) - len(suffix):] == suffix
    head_tail = Tokenizer(tiny.tokenizer, get_prompt("none-noeos"), EncodeConfig(max_length=10, truncation="head_tail"))
    ids = head_tail(long_text).ids
    full = tiny.tokenizer(long_text[: 10 * MAX_CHARS_PER_TOKEN // 2], add_special_tokens=False).input_ids
    assert ids[:5] == full[:5]
    assert tiny.tokenizer.decode(ids[5:]).strip().endswith("w2999")


def test_max_length_too_small_for_the_prompt_is_a_clear_error(tiny):
    with pytest.raises(ValueError, match="no room for the text"):
        encode(tiny, ["hi"], EncodeConfig(prompt="prompteol", max_length=4), cache=False, progress=False)


def test_bad_inputs_give_finite_vectors_of_the_right_shape(tiny):
    for prompt in ("none", "none-noeos", "prompteol", "echo"):
        states = encode(tiny, NASTY, EncodeConfig(prompt=prompt, max_length=128), cache=False, progress=False)
        for array in states.values():
            assert array.shape == (tiny.num_layers + 1, len(NASTY), tiny.hidden_size)
            assert np.isfinite(array).all()
    assert encode(tiny, [], EncodeConfig(), cache=False, progress=False)["last"].shape == (4, 0, 32)


def test_wrong_types_and_names_are_rejected(tiny):
    with pytest.raises(TypeError, match="str"):
        encode(tiny, ["ok", None], EncodeConfig(), cache=False, progress=False)
    with pytest.raises(ValueError, match="valid: " + ", ".join(PROMPTS)):
        EncodeConfig(prompt="nope")
    with pytest.raises(ValueError, match="valid: last, mean"):
        EncodeConfig(poolings=("max",))
    with pytest.raises(ValueError, match="head, head_tail"):
        EncodeConfig(truncation="middle")
    with pytest.raises(ValueError, match="max_length"):
        EncodeConfig(max_length="512")
    with pytest.raises(ValueError, match="out of range"):
        encode(tiny, ["a"], EncodeConfig(layers=(0, 99)), cache=False, progress=False)


def test_same_call_twice_is_bit_identical_without_cache(tiny):
    a = encode(tiny, TEXTS * 3, EncodeConfig(), cache=False, progress=False)
    b = encode(tiny, TEXTS * 3, EncodeConfig(), cache=False, progress=False)
    for p in a:
        assert np.array_equal(a[p], b[p])


def test_duplicates_and_order_are_preserved(tiny):
    states = encode(tiny, [TEXTS[1], TEXTS[0], TEXTS[1]], EncodeConfig(), cache=False, progress=False)
    assert np.array_equal(states["last"][:, 0], states["last"][:, 2])
    assert not np.array_equal(states["last"][:, 0], states["last"][:, 1])


def test_cache_is_reused_bit_identically(tiny, monkeypatch):
    config = EncodeConfig()
    first = encode(tiny, TEXTS, config, progress=False)
    encode_module._MEMO.clear()

    def fail(*a, **k):
        raise AssertionError("recomputed although cached")

    monkeypatch.setattr(encode_module, "_forward_pooled", fail)
    second = encode(tiny, TEXTS, config, progress=False)
    for p in first:
        assert np.array_equal(first[p], second[p])


@pytest.mark.parametrize("change", [
    dict(prompt="prompteol"), dict(max_length=64), dict(truncation="head_tail"), dict(instruction="Classify: "),
    dict(poolings=("last",)), dict(layers=(1, 2)),
])
def test_any_changed_setting_misses_the_cache(tiny, monkeypatch, change):
    encode(tiny, TEXTS, EncodeConfig(), progress=False)
    encode_module._MEMO.clear()
    calls = []
    real = encode_module._forward_pooled
    monkeypatch.setattr(encode_module, "_forward_pooled", lambda *a, **k: calls.append(1) or real(*a, **k))
    encode(tiny, TEXTS, EncodeConfig(**change), progress=False)
    assert calls, f"{change} read a stale cache"


def test_changed_backbone_or_attention_misses_the_cache(monkeypatch):
    from tests.conftest import tiny_backbone

    a = tiny_backbone("llama", seed=0)
    first = encode(a, TEXTS, EncodeConfig(), progress=False)
    encode_module._MEMO.clear()
    b = tiny_backbone("llama", "bidirectional", seed=0)
    second = encode(b, TEXTS, EncodeConfig(), progress=False)
    assert not np.array_equal(first["mean"], second["mean"])
    c = tiny_backbone("llama", seed=1)
    third = encode(c, TEXTS, EncodeConfig(), progress=False)
    assert not np.array_equal(first["mean"], third["mean"])


def test_killed_run_resumes_at_the_first_missing_chunk(tiny, monkeypatch):
    monkeypatch.setattr(encode_module, "CHUNK_SIZE", 2)
    texts = [f"sentence number {i} about cats" for i in range(7)]
    real = encode_module._forward_pooled
    calls = []

    def dies_on_third_chunk(*args, **kwargs):
        calls.append(len(args[1]))
        if len(calls) == 3:
            raise KeyboardInterrupt("killed")
        return real(*args, **kwargs)

    monkeypatch.setattr(encode_module, "_forward_pooled", dies_on_third_chunk)
    with pytest.raises(KeyboardInterrupt):
        encode(tiny, texts, EncodeConfig(), progress=False)
    calls.clear()
    monkeypatch.setattr(encode_module, "_forward_pooled", lambda *a, **k: calls.append(len(a[1])) or real(*a, **k))
    resumed = encode(tiny, texts, EncodeConfig(), progress=False)
    assert calls == [2, 1], "only the two chunks missing after the kill are computed"
    fresh = encode(tiny, texts, EncodeConfig(), cache=False, progress=False)
    for p in fresh:
        np.testing.assert_allclose(resumed[p], fresh[p], atol=1e-6)


def test_batches_are_length_sorted_with_little_padding():
    from repro.core.inference import length_batches

    lengths = [50, 40, 40, 10, 10, 10, 3]
    groups = length_batches(lengths, batch_tokens=100, max_batch=64)
    assert [i for g in groups for i in g] == list(range(len(lengths)))
    for g in groups:
        assert max(lengths[i] for i in g) * len(g) <= 100 or len(g) == 1


def test_count_tokens_counts_unique_texts(tiny):
    n = count_tokens(tiny, TEXTS + TEXTS)
    assert n == count_tokens(tiny, TEXTS) > len(TEXTS)


@pytest.mark.integration
def test_real_backbone_encodes_nasty_inputs(smollm2):
    states = encode(smollm2, NASTY, EncodeConfig(prompt="prompteol", max_length=512), progress=False)
    assert states["last"].shape == (31, len(NASTY), 576)
    assert all(np.isfinite(a).all() for a in states.values())


def test_select_returns_one_layer_and_pooling_equal_to_the_full_result(tiny):
    config = EncodeConfig(prompt="none")
    full = encode(tiny, TEXTS + TEXTS[:2], config, progress=False)
    for pooling, position in (("last", 0), ("mean", tiny.num_layers), ("mean", 1)):
        one = encode(tiny, TEXTS + TEXTS[:2], config, progress=False, select=(pooling, position))
        assert list(one) == [pooling] and one[pooling].shape == (1, len(TEXTS) + 2, tiny.hidden_size)
        np.testing.assert_array_equal(one[pooling][0], full[pooling][position])


def test_a_bf16_backbone_encodes_on_cpu_under_its_own_cache_key(tiny_dir, tmp_path):
    import torch

    from repro.core.backbones import load_backbone, resolve_dtype
    from repro.core.encode import settings_key

    full, half = load_backbone(tiny_dir), load_backbone(tiny_dir, dtype="bfloat16")
    assert next(full.model.parameters()).dtype == torch.float32  # fp32 by default on CPU
    assert next(half.model.parameters()).dtype == torch.bfloat16
    config = EncodeConfig(prompt="none", poolings=("last",))
    assert settings_key(full, config)["dtype"] != settings_key(half, config)["dtype"]
    texts = ["a man plays a guitar", "rain tomorrow", "a man plays a guitar loudly"]
    a = encode(full, texts, config, cache_root=tmp_path)["last"]
    b = encode(half, texts, config, cache_root=tmp_path)["last"]
    assert b.dtype == np.float32 and np.isfinite(b).all() and not np.array_equal(a, b)
    assert len(list(tmp_path.iterdir())) == 2  # two cache folders, one per dtype
    cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    assert cos.min() > 0.98  # the same model, in lower precision
    assert resolve_dtype(None, "cuda") == torch.bfloat16 and resolve_dtype(None, "cpu") == torch.float32
    with pytest.raises(ValueError, match="unknown dtype 'fp8'"):
        load_backbone(tiny_dir, dtype="fp8")


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine per layer per text of two [L, n, d] arrays."""
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


MIXED = TEXTS + ["a much longer sentence that does not fit one packed row " * 12, "short", "two words"] + NASTY


@pytest.mark.parametrize("arch", ["llama", "gemma3", "qwen2"])
@pytest.mark.parametrize("attention", ["causal", "bidirectional"])
@pytest.mark.parametrize("prompt", ["none", "echo"])
def test_packed_states_equal_the_padded_paths(arch, attention, prompt):
    """The padding-free packed forward (short texts side by side, positions restarted, a block-diagonal mask) gives
    every layer's last-token and mean states of the padded path: cosine >= 0.99999 per text per layer."""
    from conftest import tiny_backbone

    backbone = tiny_backbone(arch, attention)
    config = EncodeConfig(prompt=prompt, max_length=256)
    packed = encode(backbone, MIXED, config, cache=False, progress=False, row_tokens=64)
    padded = encode(backbone, MIXED, config, cache=False, progress=False, row_tokens=None)
    for pooling in ("last", "mean"):
        assert _cosines(packed[pooling], padded[pooling]).min() >= 0.99999
        np.testing.assert_allclose(packed[pooling], padded[pooling], atol=1e-4, rtol=1e-4)


def test_packed_states_equal_the_padded_on_a_real_backbone(smollm2):
    """The same on SmolLM2-135M (its massive activations included), with PromptEOL's template, every layer. Cut at
    96 tokens: the two long texts still fill more than a packed row and are cut, and the padded reference does not
    pad every text to 512 tokens (two thirds of this test's time at the default)."""
    texts = MIXED + [f"Sentence number {i} about a {w} that is short." for i, w in enumerate(["dog", "cat"] * 20)]
    config = EncodeConfig(prompt="prompteol", max_length=96)
    packed = encode(smollm2, texts, config, cache=False, progress=False)
    padded = encode(smollm2, texts, config, cache=False, progress=False, row_tokens=None)
    for pooling in ("last", "mean"):
        assert _cosines(packed[pooling], padded[pooling]).min() >= 0.99999


def test_row_tokens_must_be_a_width_or_none(tiny):
    for bad in (0, 1, True, 2.5, "64"):
        with pytest.raises(ValueError, match="row_tokens must be"):
            encode(tiny, TEXTS, EncodeConfig(), cache=False, progress=False, row_tokens=bad)


def test_official_tokenization_is_the_filled_template_in_one_call(smollm2):
    """EmbedFilter's official PromptEOL: the filled template tokenized in one call ("guitar" "." '"' become
    "guitar" '."' in SmolLM2), a too long text cut and re-tokenized so the prompt is never cut; the earlier
    piece-wise form stays the default and keeps its cache key."""
    prompt = get_prompt("prompteol")
    official = EncodeConfig(prompt="prompteol", tokenization="official", max_length=48, truncation="head_tail")
    tokenize = Tokenizer(smollm2.tokenizer, prompt, official)
    for text in TEXTS:
        assert tokenize(text).ids == smollm2.tokenizer(prompt.render(text), add_special_tokens=False).input_ids
    pieces = Tokenizer(smollm2.tokenizer, prompt, EncodeConfig(prompt="prompteol"))("A man is playing a guitar.")
    assert pieces.ids != tokenize("A man is playing a guitar.").ids  # the boundary merge differs
    tail = smollm2.tokenizer('" means in one word:"', add_special_tokens=False).input_ids[-4:]
    for text in ["word " * 300, "x" * 100_000, "a." * 200]:
        ids = tokenize(text).ids
        assert len(ids) <= 48 and ids[-4:] == tail  # the prompt's end survives the cut
    assert encode_module.settings_key(smollm2, EncodeConfig())["config"] == {
        "prompt": "none", "poolings": ("last", "mean"), "max_length": 512, "truncation": "head", "instruction": "",
        "layers": None}  # the default's key as before the setting existed
    assert encode_module.settings_key(smollm2, official)["config"]["tokenization"] == "official"
    with pytest.raises(ValueError, match="unknown tokenization"):
        EncodeConfig(tokenization="one-call")


def test_official_echo_has_bos_and_copies_cut_to_max_length(smollm2):
    """EmbedFilter's official Echo: BOS always in front, each copy of the text cut to its first max_length tokens,
    the mean over the second copy and EOS."""
    config = EncodeConfig(prompt="echo", tokenization="official", max_length=16)
    item = Tokenizer(smollm2.tokenizer, get_prompt("echo"), config)("word " * 40)
    text = smollm2.tokenizer("word " * 40, add_special_tokens=False).input_ids[:16]
    assert item.ids[0] == smollm2.tokenizer.bos_token_id and item.ids[-1] == smollm2.tokenizer.eos_token_id
    pieces = [smollm2.tokenizer(p, add_special_tokens=False).input_ids for p in get_prompt("echo").literal_segments()]
    assert item.ids[item.mean_start:-1] == text and item.ids[1 + len(pieces[0]):1 + len(pieces[0]) + 16] == text
    assert len(item.ids) == 1 + len(pieces[0]) + 16 + len(pieces[1]) + 16 + len(pieces[2]) + 1
    states = encode(smollm2, ["word " * 40, "short"], EncodeConfig(prompt="echo", tokenization="official",
                                                                   layers=(smollm2.num_layers,)),
                    cache=False, progress=False)
    assert np.isfinite(states["mean"]).all()
