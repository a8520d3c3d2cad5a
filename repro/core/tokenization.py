"""Prompt-aware tokenization for the states encoder (:mod:`repro.core.encode`): the BOS the tokenizer adds, the
template's literal pieces, the text slots (truncated so the prompt is never cut), EOS where the prompt asks for it,
and where mean pooling starts. ``config.tokenization`` chooses the book's piece-wise form or EmbedFilter's
official one (:class:`repro.core.encode.EncodeConfig`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from repro.core.prompts import Prompt

MAX_CHARS_PER_TOKEN = 32  # texts are clipped to max_length * this many characters before tokenizing


@dataclass
class Tokenized:
    ids: list[int]
    mean_start: int  # first position of the mean-pooling span


def bos_ids(tokenizer) -> list[int]:
    """[bos] if the tokenizer adds a BOS token by itself, else []."""
    probe = tokenizer("a").input_ids
    bos = tokenizer.bos_token_id
    return [bos] if bos is not None and probe and probe[0] == bos else []


def eos_id(tokenizer) -> int:
    if tokenizer.eos_token_id is None:
        raise ValueError("the tokenizer has no EOS token; use a prompt with append_eos=False")
    return int(tokenizer.eos_token_id)


def truncate_ids(ids: list[int], budget: int, how: str) -> list[int]:
    if len(ids) <= budget:
        return ids
    if how == "head":
        return ids[:budget]
    head = math.ceil(budget / 2)
    return ids[:head] + ids[len(ids) - (budget - head):]


def clip_chars(text: str, max_chars: int, how: str) -> str:
    if len(text) <= max_chars:
        return text
    if how == "head":
        return text[:max_chars]
    return text[: max_chars // 2] + text[-(max_chars // 2):]


class Tokenizer:
    """Prompt-aware tokenization: specials + literal pieces + (truncated) text slots."""

    def __init__(self, tokenizer, prompt: Prompt, config):
        """``config``: a :class:`repro.core.encode.EncodeConfig` (its max_length, truncation, instruction and
        tokenization are read; typed loosely so that this module does not import the encoder)."""
        self.tok = tokenizer
        self.prompt = prompt
        self.config = config
        self.bos = bos_ids(tokenizer)
        self.eos = [eos_id(tokenizer)] if prompt.append_eos else []
        self.literals = [tokenizer(s, add_special_tokens=False).input_ids if s else []
                         for s in prompt.literal_segments(config.instruction)]
        fixed = len(self.bos) + len(self.eos) + sum(map(len, self.literals))
        self.per_copy = (config.max_length - fixed) // max(prompt.copies, 1)
        if config.tokenization == "official" and prompt.copies > 1:  # official Echo: max_length text tokens a copy
            self.per_copy = config.max_length
        if self.per_copy < 1:
            raise ValueError(
                f"max_length={config.max_length} leaves no room for the text in prompt "
                f"'{prompt.name}' ({fixed} prompt tokens)"
            )

    def __call__(self, text: str) -> Tokenized:
        if not isinstance(text, str):
            raise TypeError(f"texts must be str, got {type(text).__name__}")
        text = clip_chars(text, self.config.max_length * MAX_CHARS_PER_TOKEN, self.config.truncation)
        if self.config.tokenization == "official":
            return self._official(text)
        text_ids = self.tok(text, add_special_tokens=False).input_ids if text else []
        text_ids = truncate_ids(text_ids, self.per_copy, self.config.truncation)
        return self._assemble(text_ids, self.bos)

    def _official(self, text: str) -> Tokenized:
        """EmbedFilter's official tokenization (``run4qwen_prompteol.py``, ``run4qwen_echo.py``)."""
        if self.prompt.copies > 1:  # Echo: BOS always (EOS standing in where there is none), each copy <= max_length
            bos = self.tok.bos_token_id if self.tok.bos_token_id is not None else eos_id(self.tok)
            text_ids = self.tok(text, add_special_tokens=False).input_ids if text else []
            return self._assemble(text_ids[: self.per_copy], [int(bos)])
        text_ids = self.tok(text, add_special_tokens=False).input_ids if text else []
        budget = self.per_copy
        while True:  # one call on the filled template; a too long text is cut and the template re-tokenized
            cut = text if len(text_ids) <= budget else self.tok.decode(truncate_ids(text_ids, budget,
                                                                                 self.config.truncation))
            ids = list(self.bos) + self.tok(self.prompt.render(cut, self.config.instruction),
                                            add_special_tokens=False).input_ids + self.eos
            if len(ids) <= self.config.max_length or budget <= 0:
                return Tokenized(ids, 0)
            budget = min(budget, len(text_ids)) - (len(ids) - self.config.max_length)  # strictly smaller

    def _assemble(self, text_ids: list[int], bos: list[int]) -> Tokenized:
        """Specials, literal pieces and the text's token ids, each tokenized apart."""
        ids = list(bos) + list(self.literals[0])
        mean_start = 0
        for copy, literal in enumerate(self.literals[1:]):
            if self.prompt.mean_from_copy == copy:
                mean_start = len(ids)
            ids += text_ids + literal
        ids += self.eos
        if not ids:  # empty text, no prompt, no specials: encode a lone EOS so the result is defined
            ids = [eos_id(self.tok)]
        return Tokenized(ids, min(mean_start, len(ids) - 1))


def pad_id(tokenizer) -> int:
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0):
        if candidate is not None:
            return int(candidate)
    return 0
