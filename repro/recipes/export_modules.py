"""The two sentence-transformers modules a book recipe needs beyond sentence-transformers' own.

* :class:`PromptedDecoder`, the input module: a decoder (``models.Transformer`` underneath, loaded from the export
  folder) that renders each text through one of the book's prompts with :mod:`repro.core.encode`'s own tokenizer
  (the recipe's tokenization: EmbedFilter's official one-call form, or the book's pieces tokenized apart; the text
  slot truncated and never the prompt, BOS and EOS as in the book), runs
  the decoder in the recipe's attention mode (causal or bidirectional) and hands on the last layer's token states,
  every layer's states for multi-layer heads, and the positions to pool: every real token, or for Echo the second
  copy of the text and the final token. sentence-transformers' ``Pooling`` reads those positions from
  ``attention_mask``; the padding mask itself stays in ``input_mask``.
* :class:`PoolingHead`: Tang & Yang's trainable pooling (:class:`repro.training.heads.TrainablePooling`) over the
  head input of a Paper 1 design (:func:`repro.training.heads.head_inputs`).

The text modality is pinned to the decoder's ``forward`` and ``last_hidden_state``: sentence-transformers 6.2 would
otherwise render plain text through an instruct tokenizer's chat template (for SmolLM2 a 26-token system prompt).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sentence_transformers.base.modules import Module, Transformer

from repro.core.backbones import ATTENTION_MODES, decoder_attention_mask, set_attention
from repro.core.encode import EncodeConfig, Tokenizer, check_texts, pad_id
from repro.core.prompts import get_prompt
from repro.training.data import pad_right
from repro.training.heads import HEAD_INPUTS, TrainablePooling, head_inputs

TEXT_MODALITY = {"text": {"method": "forward", "method_output_name": "last_hidden_state"}}


class PromptedDecoder(Transformer):
    """A decoder that embeds texts rendered through a prompt of :data:`repro.core.prompts.PROMPTS`."""

    config_keys = [*Transformer.config_keys, "prompt", "prompt_template", "max_length", "truncation", "attention",
                   "all_layers", "tokenization"]

    def __init__(self, model_name_or_path: str, *, prompt: str = "none", prompt_template: str | None = None,
                 max_length: int = 512, truncation: str = "head", attention: str = "causal", all_layers: bool = False,
                 tokenization: str = "pieces", **kwargs):
        kwargs.setdefault("modality_config", TEXT_MODALITY)
        kwargs.setdefault("module_output_name", "token_embeddings")
        super().__init__(model_name_or_path, **kwargs)
        template = get_prompt(prompt).template
        if prompt_template is not None and prompt_template != template:
            raise ValueError(f"this export renders prompt '{prompt}' as {prompt_template!r}, but the installed repro "
                             f"package renders it as {template!r}: install the repro version that exported it")
        if attention not in ATTENTION_MODES:
            raise ValueError(f"unknown attention mode '{attention}'; valid: {', '.join(ATTENTION_MODES)}")
        self.prompt, self.prompt_template = prompt, template
        self.max_length, self.truncation = int(max_length), truncation
        self.attention, self.all_layers = attention, bool(all_layers)
        # a folder exported before the option names no tokenization: it was the book's piece-wise form
        self.tokenization = tokenization
        self.encode_config = EncodeConfig(prompt=prompt, max_length=self.max_length, truncation=truncation,
                                          tokenization=tokenization)
        self._tokenizers: dict[str, Tokenizer] = {}
        set_attention(self.model, attention)

    def _tokenizer(self, instruction: str) -> Tokenizer:
        if instruction not in self._tokenizers:
            config = replace(self.encode_config, instruction=instruction)
            self._tokenizers[instruction] = Tokenizer(self.tokenizer, get_prompt(self.prompt), config)
        return self._tokenizers[instruction]

    def preprocess(self, inputs, prompt: str | None = None, **kwargs) -> dict[str, Any]:
        """Right-padded ``input_ids`` and ``input_mask``, and ``attention_mask`` = the positions to pool.
        ``prompt`` (sentence-transformers' prompt argument) fills the template's ``{instruction}`` slot."""
        texts = check_texts(inputs)
        if prompt and "{instruction}" not in self.prompt_template:
            raise ValueError(f"prompt '{self.prompt}' has no instruction slot: encode without prompt=")
        items = [self._tokenizer(prompt or "")(text) for text in texts]
        ids, mask = pad_right([item.ids for item in items], pad_id(self.tokenizer))
        pooled = mask.clone()
        for row, item in enumerate(items):
            pooled[row, :item.mean_start] = 0
        return {"input_ids": ids, "input_mask": mask, "attention_mask": pooled}

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        ids, mask = features["input_ids"], features["input_mask"]
        embeds = self.model.get_input_embeddings()(ids)
        attention = decoder_attention_mask(self.model.config, self.attention, embeds, mask)
        out = self.model(input_ids=ids, attention_mask=attention, output_hidden_states=self.all_layers,
                         use_cache=False, return_dict=True)
        features["token_embeddings"] = out.last_hidden_state
        if self.all_layers:
            features["all_layer_embeddings"] = out.hidden_states
        return features

    def get_config_dict(self) -> dict[str, Any]:
        return super().get_config_dict() | {"prompt": self.prompt, "prompt_template": self.prompt_template,
                                            "max_length": self.max_length, "truncation": self.truncation,
                                            "attention": self.attention, "all_layers": self.all_layers,
                                            "tokenization": self.tokenization}


class PoolingHead(Module):
    """Trainable pooling of a Paper 1 design over its head input; writes ``sentence_embedding`` (L2-normalised)."""

    config_keys = ["head_input", "hidden_size", "num_layers", "latents", "heads"]

    def __init__(self, head_input: str, hidden_size: int, num_layers: int | None = None, latents: int = 32,
                 heads: int = 8):
        super().__init__()
        if head_input not in HEAD_INPUTS:
            raise ValueError(f"unknown head input '{head_input}'; valid: {', '.join(HEAD_INPUTS)}")
        self.head_input, self.hidden_size, self.num_layers = head_input, hidden_size, num_layers
        self.latents, self.heads = latents, heads
        self.head = TrainablePooling(hidden_size, num_layers, latents=latents, heads=heads)

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        hidden = features.get("all_layer_embeddings") or (features["token_embeddings"],)
        states, padding = head_inputs(hidden, features["input_mask"], self.head_input)
        features["sentence_embedding"] = self.head(states, padding)
        return features

    def get_embedding_dimension(self) -> int:
        return self.hidden_size

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.save_config(output_path)
        self.save_torch_weights(output_path, safe_serialization=safe_serialization)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token=None, cache_folder=None, revision=None,
             local_files_only: bool = False, **kwargs):
        hub = {"subfolder": subfolder, "token": token, "cache_folder": cache_folder, "revision": revision,
               "local_files_only": local_files_only}
        module = cls(**cls.load_config(model_name_or_path=model_name_or_path, **hub))
        return cls.load_torch_weights(model_name_or_path=model_name_or_path, model=module, **hub)

