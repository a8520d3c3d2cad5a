"""Prompt templates, one table for every paper.

A template is a string with one or more ``{text}`` slots and optionally an ``{instruction}`` slot.
``mean_from_copy`` says where mean pooling starts: ``None`` = the whole sequence, ``1`` = the
second copy of the text (Echo embeddings pool over the repeated text and the final token).
``append_eos``: append the tokenizer's EOS token (Tang & Yang append EOS to every input and pool it;
PromptEOL wants the state that predicts the next word, so no EOS).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Prompt:
    name: str
    template: str
    append_eos: bool = False
    mean_from_copy: int | None = None
    source: str = ""

    @property
    def copies(self) -> int:
        return self.template.count("{text}")

    def literal_segments(self, instruction: str = "") -> list[str]:
        """The template's literal pieces around the text slots (``copies + 1`` strings)."""
        return [part.replace("{instruction}", instruction) for part in self.template.split("{text}")]

    def render(self, text: str, instruction: str = "") -> str:
        return self.template.replace("{instruction}", instruction).replace("{text}", text)


PROMPTS: dict[str, Prompt] = {
    p.name: p
    for p in (
        Prompt("none", "{text}", append_eos=True,
               source="plain text + EOS (Tang & Yang: EOS appended to every input)"),
        Prompt("none-noeos", "{text}", append_eos=False, source="plain text, last real token"),
        Prompt("instruction", "{instruction}{text}", append_eos=True,
               source="Tang & Yang: task instruction glued before the text, no separator, EOS appended"),
        Prompt("prompteol", 'This sentence : "{text}" means in one word:"',
               source="PromptEOL (Jiang et al. 2023)"),
        Prompt("prompteol-summarize", 'Summarize the sentence: "{text}" in one word:"',
               source="EmbedFilter official code's PromptEOL for Qwen and Llama"),
        Prompt("echo", "Rewrite the following paragraph: {text}. The rewritten paragraph: {text}",
               append_eos=True, mean_from_copy=1,
               source="Echo embeddings (Springer et al. 2024), as in EmbedFilter's code: mean over the "
                      "second copy plus EOS"),
        Prompt("autoregembed-instruction", "{text}\n{instruction}",
               source="AutoRegEmbed: [bos] text \\n instruction \\n (the encoder appends the newline and the "
                      "compression tokens)"),
        Prompt("autoregembed-passage",
               'Passage: "{text}". Use one word to represent the passage in a retrieval task. The word is: "',
               source="AutoRegEmbed's retrieval document prompt with a straight closing quote (the book's earlier runs)"),
        Prompt("autoregembed-passage-official",
               'Passage: "{text}". Use one word to represent the passage in a retrieval task. The word is: \u201c',
               source="AutoRegEmbed official code (eval/eval_autoregembed.py): retrieval document prompt, ending "
                      "with a curly opening quote (U+201C)"),
    )
}


def get_prompt(name: str | Prompt) -> Prompt:
    if isinstance(name, Prompt):
        return name
    if name not in PROMPTS:
        raise ValueError(f"unknown prompt '{name}'; valid: {', '.join(PROMPTS)}")
    return PROMPTS[name]
