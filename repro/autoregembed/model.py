"""AutoRegEmbed's model: an encoder whose compression-token states a frozen decoder reads; inference embeddings."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from repro.autoregembed.config import BOS_RULES, CUTS, NEXT_INSTRUCTION, PASSAGE_PROMPT, QUERY_PROMPT, TEMPLATES
from repro.autoregembed.objectives import OBJECTIVES
from repro.core.backbones import load_backbone
from repro.core.embedder import Embedder
from repro.core.encode import EncodeConfig
from repro.core.inference import run_in_order
from repro.core.packing import Packed, pack
from repro.core.prompts import get_prompt
from repro.core.tokenization import MAX_CHARS_PER_TOKEN, Tokenizer, bos_ids, clip_chars, eos_id, pad_id, truncate_ids
from repro.training.data import pad_right
from repro.training.lora import add_lora


class TextIds:
    """The encoder's inputs and the decoder's targets (``text + EOS``), as lists of token ids, under a template
    (:data:`repro.autoregembed.config.TEMPLATES`).

    * ``"book"``: ``render(text) + "\\n"`` with the prompt-aware truncation of :mod:`repro.core.encode` (head and
      tail kept), BOS only where the tokenizer adds one; inference as training unless ``newline=False``.
    * ``"official"``: training inputs ``[BOS] + tok(text + "\\n") + tok(instruction + "\\n")``, the pieces tokenized
      on their own, the text cut on the right to fit ``max_length``; inference ``[BOS] + tok(filled template)`` in
      one call, cut on the right at ``max_length``, no newline before the compression tokens. ``cut="head_tail"``:
      a long training input keeps its head and its tail instead (:data:`repro.autoregembed.config.CUTS`);
      ``bos="tokenizer"``: BOS only where the tokenizer adds one, in training and at inference
      (:data:`repro.autoregembed.config.BOS_RULES`)."""

    def __init__(self, tokenizer, max_length: int, target_max_length: int, template: str = "book", cut: str = "",
                 bos: str = ""):
        if template not in TEMPLATES:
            raise ValueError(f"unknown template '{template}'; valid: {', '.join(TEMPLATES)}")
        if cut not in ("", *CUTS):
            raise ValueError(f"unknown cut '{cut}'; valid: {', '.join(CUTS)}")
        if bos not in ("", *BOS_RULES):
            raise ValueError(f"unknown bos '{bos}'; valid: {', '.join(BOS_RULES)}")
        self.tok, self.template, self.cut = tokenizer, template, cut or "right"
        self.max_length, self.target_max_length = max_length, target_max_length
        self.newline = tokenizer("\n", add_special_tokens=False).input_ids
        self.eos = eos_id(tokenizer)
        self.pad = pad_id(tokenizer)
        # the official code always puts the tokenizer's BOS first; a tokenizer without one gets its EOS there
        # (bos="tokenizer": only a BOS the tokenizer adds itself, none for SmolLM2)
        always = [int(tokenizer.bos_token_id) if tokenizer.bos_token_id is not None else self.eos]
        self.bos = always if bos in ("", "always") else bos_ids(tokenizer)
        self._tokenizers: dict[str, Tokenizer] = {}

    @classmethod
    def of(cls, tokenizer, config, max_length: int | None = None) -> TextIds:
        """The texts of a stage's ``config`` (its lengths and template; ``max_length``: another encoder length,
        e.g. inference's)."""
        return cls(tokenizer, max_length or config.max_length, config.target_max_length, config.template,
                   config.cut, config.bos)

    def encoder(self, text: str, prompt: str = "none-noeos", instruction: str = "", newline: bool = True) -> list[int]:
        """The book's template: token ids of ``prompt`` rendered with ``text`` (and ``instruction``), then a newline
        (training; ``newline=False``: without it, as the official inference)."""
        key = f"{prompt}\0{instruction}"
        if key not in self._tokenizers:
            config = EncodeConfig(prompt=prompt, max_length=self.max_length - len(self.newline),
                                  truncation="head_tail", instruction=instruction)
            self._tokenizers[key] = Tokenizer(self.tok, get_prompt(prompt), config)
        return self._tokenizers[key](text).ids + (self.newline if newline else [])

    def _pieces(self, text: str, instruction: str) -> list[int]:
        """The official training input: ``[BOS] + tok(text + "\\n") + tok(instruction + "\\n")``."""
        _check_text(text)
        tail = self._ids(instruction + "\n")
        budget = max(self.max_length - len(self.bos) - len(tail), 0)
        if self.cut == "head_tail":
            body = truncate_ids(self._ids(clip_chars(text, budget * MAX_CHARS_PER_TOKEN, "head_tail") + "\n"),
                                budget, "head_tail")
        else:
            body = self._ids(text[:budget * MAX_CHARS_PER_TOKEN] + "\n")[:budget]
        return self.bos + body + tail

    def _ids(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False).input_ids

    def stage1_input(self, context: str, instruction: str) -> list[int]:
        """Stage 1's encoder input: the context and its instruction (empty for the T0 prompts)."""
        if self.template == "book":
            return self.encoder(query_text(context, instruction))
        return self._pieces(context, instruction)

    def stage2_input(self, text: str, instruction: str) -> list[int]:
        """Stage 2's encoder input: a query or a positive, then the next-token instruction."""
        if self.template == "book":
            return self.encoder(text, QUERY_PROMPT, instruction)
        return self._pieces(text, instruction)

    def inference_input(self, text: str, prompt: str, instruction: str = "", newline: bool = True) -> list[int]:
        """The encoder input of an embedding (``newline``: the book's template only)."""
        if self.template == "book":
            return self.encoder(text, prompt, instruction, newline)
        _check_text(text)
        budget = self.max_length - len(self.bos)
        rendered = get_prompt(prompt).render(text[:budget * MAX_CHARS_PER_TOKEN], instruction)
        return self.bos + self._ids(rendered)[:budget]

    def target(self, text: str) -> list[int]:
        _check_text(text)
        ids = self.tok(text, add_special_tokens=False).input_ids[:self.target_max_length - 1]
        return ids + [self.eos]

    def pad_batch(self, items: Sequence[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        return pad_right(items, self.pad)


def _check_text(text) -> None:
    if not isinstance(text, str):
        raise TypeError(f"texts must be str, got {type(text).__name__}")


def query_text(text: str, instruction: str) -> str:
    """``context \\n instruction`` (the book's template; the encoder adds the final newline)."""
    return f"{text}\n{instruction}" if instruction else text


class AutoRegModel(nn.Module):
    """Trainable encoder (full or LoRA) + compression-token embeddings + the frozen original decoder."""

    def __init__(self, backbone, finetune: str, compression_tokens: int, decoder: nn.Module | None):
        super().__init__()
        self.backbone_ref = [backbone]
        self.lm = backbone.model
        self.finetune = finetune
        self.decoder_ref = [decoder]  # frozen copy (full fine-tuning); None = the LoRA model, adapters off
        table = self.lm.get_input_embeddings().weight.detach()
        generator = torch.Generator().manual_seed(0)
        start = table.mean(0, keepdim=True) + 1e-3 * table.std(0, keepdim=True) * torch.randn(
            compression_tokens, table.shape[1], generator=generator)
        self.compression = nn.Parameter(start.to(table.device))

    @property
    def backbone(self):
        return self.backbone_ref[0]

    @property
    def k(self) -> int:
        return int(self.compression.shape[0])

    def memory(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``[B, k, d]``: the encoder's final states at the compression positions after each text."""
        embed = self.lm.get_input_embeddings()
        batch, width = ids.shape
        lengths = mask.sum(1)
        inputs = torch.cat([embed(ids), torch.zeros(batch, self.k, embed.embedding_dim, device=ids.device)], 1)
        rows = torch.arange(batch, device=ids.device)[:, None]
        cols = lengths[:, None] + torch.arange(self.k, device=ids.device)[None]
        inputs = inputs.index_put((rows, cols), self.compression.unsqueeze(0).expand(batch, -1, -1))
        full_mask = (torch.arange(width + self.k, device=ids.device)[None] < (lengths + self.k)[:, None]).long()
        out = self.lm.get_decoder()(inputs_embeds=inputs, attention_mask=full_mask, use_cache=False)
        return out.last_hidden_state[rows, cols]

    def packed_memory(self, sequences: Sequence[list[int]], pad: int) -> torch.Tensor:
        """:meth:`memory` of the token-id lists ``sequences`` from one padding-free packed forward (each text and
        its k compression tokens side by side in rows, positions restarted, a block-diagonal causal mask:
        :func:`repro.core.packing.pack`); the same states within float tolerance (tested)."""
        k = self.k
        packed = _pack_with(sequences, pad, k, after=True).to(self.compression.device)
        rows, cols = _slots(packed, k, after=True)
        inputs = self.lm.get_input_embeddings()(packed.ids)
        inputs = inputs.index_put((rows, cols), self.compression.unsqueeze(0).expand(len(sequences), -1, -1))
        out = self.lm.get_decoder()(inputs_embeds=inputs, position_ids=packed.positions,
                                    attention_mask=packed.mask, use_cache=False)
        return out.last_hidden_state[rows, cols]

    def packed_target_log_probs(self, memory: torch.Tensor, targets: Sequence[list[int]], pad: int) -> torch.Tensor:
        """:meth:`target_log_probs` (summed log p(target | memory) per row) from one packed decoder forward, with
        ``lm_head`` only on the positions that predict a real target token (no padding positions)."""
        k = memory.shape[1]
        packed = _pack_with(targets, pad, k, after=False).to(memory.device)
        rows, cols = _slots(packed, k, after=False)
        lengths = packed.length - k
        owner = torch.repeat_interleave(torch.arange(len(targets), device=memory.device), lengths)
        offset = torch.arange(int(lengths.sum()), device=memory.device) - torch.repeat_interleave(
            torch.cumsum(lengths, 0) - lengths, lengths)
        width = packed.ids.shape[1]
        # the state at position k-1+t of a sequence predicts its target token t
        flat = packed.row[owner] * width + packed.start[owner] + k - 1 + offset
        wanted = packed.ids.reshape(-1)[flat + 1]

        def run(lm):
            inputs = lm.get_input_embeddings()(packed.ids).index_put((rows, cols), memory)
            hidden = lm.get_decoder()(inputs_embeds=inputs, position_ids=packed.positions,
                                      attention_mask=packed.mask, use_cache=False).last_hidden_state
            logits = lm.get_output_embeddings()(hidden.reshape(-1, hidden.shape[-1])[flat]).float()
            return -F.cross_entropy(logits, wanted, reduction="none")

        picked = self._decoder_call(run)
        return torch.zeros(len(targets), dtype=picked.dtype, device=picked.device).index_add(0, owner, picked)

    def embed(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The inference embedding: mean of the compression states, L2-normalised."""
        return F.normalize(self.memory(ids, mask).mean(1), dim=-1)

    def _decoder_call(self, fn):
        decoder = self.decoder_ref[0]
        if decoder is not None:
            return fn(decoder)
        with self.lm.disable_adapter():
            return fn(self.lm)

    def target_log_probs(self, memory: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor,
                         full: bool = False) -> torch.Tensor:
        """Summed log p(target | memory) per row (``full``: the ``[B, T, V]`` next-token log-distributions)."""
        k, width = memory.shape[1], ids.shape[1]

        def run(lm):
            inputs = torch.cat([memory, lm.get_input_embeddings()(ids)], 1)
            attention = torch.cat([torch.ones(ids.shape[0], k, dtype=mask.dtype, device=ids.device), mask], 1)
            hidden = lm.get_decoder()(inputs_embeds=inputs, attention_mask=attention, use_cache=False)
            # the state at position k-1+t predicts target token t; lm_head only on those positions
            return lm.get_output_embeddings()(hidden.last_hidden_state[:, k - 1:k - 1 + width]).float()

        log_probs = torch.log_softmax(self._decoder_call(run), dim=-1)
        if full:
            return log_probs
        picked = log_probs.gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        return (picked * mask).sum(1)

    def forward(self, batch: dict) -> torch.Tensor:
        return OBJECTIVES[batch["objective"]](self, batch)


def _pack_with(sequences: Sequence[list[int]], pad: int, k: int, after: bool) -> Packed:
    """Each sequence with k placeholder slots after it (the encoder's compression tokens) or before it (the
    decoder's memory), packed in rows as wide as the longest (causal)."""
    if not sequences:
        raise ValueError("nothing to pack")
    slots = [pad] * k
    filled = [list(s) + slots if after else slots + list(s) for s in sequences]
    return pack(filled, pad, causal=True, row_tokens=max(len(s) for s in filled))


def _slots(packed: Packed, k: int, after: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(rows, columns) [n, k] of the placeholder slots :func:`_pack_with` made."""
    first = packed.start + packed.length - k if after else packed.start
    return packed.row[:, None].expand(-1, k), first[:, None] + torch.arange(k, device=packed.ids.device)[None]


def build_autoreg(config, device: str | None = None) -> AutoRegModel:
    """Encoder (the backbone, full or LoRA), a frozen copy of the original as decoder, compression tokens."""
    torch.manual_seed(config.seed)
    backbone = load_backbone(config.backbone, device=device, dtype="float32")
    decoder = None
    if config.finetune == "full":
        decoder = copy.deepcopy(backbone.model).eval()
        for p in decoder.parameters():
            p.requires_grad_(False)
        for p in backbone.model.parameters():
            p.requires_grad_(True)
        backbone.model.get_output_embeddings().weight.requires_grad_(False)  # lm_head is never used by the encoder
        if backbone.model.get_output_embeddings().weight is backbone.model.get_input_embeddings().weight:
            backbone.model.get_input_embeddings().weight.requires_grad_(True)  # tied: the encoder uses it
    else:
        backbone.model = add_lora(backbone.model, config.lora_r, config.lora_alpha, config.lora_dropout)
    model = AutoRegModel(backbone, config.finetune, config.compression_tokens, decoder)
    return model.to(next(backbone.model.parameters()).device)


def embed_texts(model: AutoRegModel, texts: TextIds, items: list[str], prompt: str = QUERY_PROMPT,
                instruction: str = NEXT_INSTRUCTION, batch_tokens: int = 4096, max_batch: int = 64,
                newline: bool = True) -> np.ndarray:
    """Inference embeddings of ``items`` rendered with ``prompt`` (length-sorted batches, no gradients:
    :func:`repro.core.inference.run_in_order`; ``newline``: the training-time newline before the compression
    tokens)."""
    if not items:
        return np.zeros((0, model.backbone.hidden_size), dtype=np.float32)
    ids = [texts.inference_input(t, prompt, instruction, newline) for t in items]
    device = model.compression.device

    def forward(group: list[int]) -> np.ndarray:
        tensor, mask = texts.pad_batch([ids[i] for i in group])
        return model.embed(tensor.to(device), mask.to(device)).float().cpu().numpy()

    return run_in_order([len(i) for i in ids], forward, batch_tokens=batch_tokens, max_batch=max_batch, model=model)


class AutoRegEmbedder(Embedder):
    """A trained AutoRegEmbed encoder as an :class:`repro.core.embedder.Embedder`: the mean of the compression
    states, L2-normalised. Queries and sentences are rendered ``{text}\\n{instruction}`` (default: the
    config's next-token instruction); retrieval documents (``role="document"``) with the passage prompt."""

    def __init__(self, model: AutoRegModel, max_length: int, target_max_length: int,
                 instruction: str = NEXT_INSTRUCTION, label: str = "autoregembed", digest: str = "",
                 newline: bool = True, passage_prompt: str = PASSAGE_PROMPT, template: str = "book", bos: str = ""):
        self.model, self.instruction, self.label, self.digest = model, instruction, label, digest
        self.newline, self.passage_prompt = newline, passage_prompt
        self.texts = TextIds(model.backbone.tokenizer, max_length, target_max_length, template, bos=bos)

    @property
    def dim(self) -> int:
        return self.model.backbone.hidden_size

    @property
    def identity(self) -> str:
        return f"{self.label}-{self.digest or 'local'}"

    def embed(self, texts: list[str], role: str, instruction: str | None) -> np.ndarray:
        if role == "document":
            return embed_texts(self.model, self.texts, texts, self.passage_prompt, newline=self.newline)
        return embed_texts(self.model, self.texts, texts, QUERY_PROMPT, instruction or self.instruction,
                           newline=self.newline)
