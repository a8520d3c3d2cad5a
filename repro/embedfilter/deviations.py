"""Paper 2's deviations from the paper and its official code, as one table every EmbedFilter page shows: the
official side quoted (with the repository and commit it was read at), ours generated from the settings the page
runs with (tokenization, scoring protocol, suite) and the library's own definitions, so that a page computed
with the earlier piece-wise tokenization says so and one with the official tokenization does not claim a
difference that is gone."""

from __future__ import annotations

import pandas as pd

from repro.core.encode import TOKENIZATIONS
from repro.core.prompts import get_prompt
from repro.core.suites import suite_caps_text
from repro.core.tasks import TASKS, check_task_names
from repro.embedfilter.quoted import PAPER_DATASETS

OFFICIAL = "CentreChen/EmbFilter@c3958e3"  # as read on 2026-12-05
PROTOCOLS = ("mteb", "official")
QUOTED = {  # the paper and its official code, quoted
    "backbones": "Qwen2.5-0.5B, Llama-3.1-8B-Instruct, Mistral-7B-Instruct-v0.3 (fp16 on GPUs)",
    "tasks": f"{PAPER_DATASETS} MTEB datasets (main table); retrieval limited to SciFact, ArguAna, NFCorpus, "
             "FiQA2018, Quora, SCIDOCS, Touche2020, TRECCOVID",
    "PromptEOL template": 'Qwen and Llama: `Summarize the sentence: "{text}" in one word:"` (run4qwen_prompteol.py)',
    "tokenization": "PromptEOL: the filled template tokenized in one call (run4qwen_prompteol.py:25-26); Echo: the "
                    "template's pieces and the text tokenized apart, BOS always in front (the EOS id where there is "
                    "none), EOS at the end (run4qwen_echo.py:23-33, 121-124)",
    "truncation": "PromptEOL: the tokenized template cut to its first and last 256 tokens when longer than 512; "
                  "Echo: the text cut to its first 512 tokens, then doubled",
    "scoring": "PromptEOL: L2-normalised embeddings for every task but classification; Echo: no normalisation "
               "(the l2_normalize argument is never used); pair classification reported as cosine AP",
}


def _tasks_text(suite: str) -> str:
    tasks = check_task_names(None, suite)
    counts = pd.Series([TASKS[t].category for t in tasks]).value_counts()
    return (f"the offline '{suite}' suite: {len(tasks)} tasks ({', '.join(f'{c} {n}' for c, n in counts.items())}), "
            f"each capped and seeded ({suite_caps_text(suite)}); retrieval corpora are capped, so retrieval scores "
            "are not comparable with MTEB's")


def deviation_table(tokenization: str = "official", protocol: str = "mteb", suite: str = "compact") -> pd.DataFrame:
    """aspect, the paper / official code (quoted), ours (for a page run with ``tokenization``, ``protocol`` and
    ``suite``), and whether it deviates."""
    if tokenization not in TOKENIZATIONS:
        raise ValueError(f"unknown tokenization '{tokenization}'; valid: {', '.join(TOKENIZATIONS)}")
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol '{protocol}'; valid: {', '.join(PROTOCOLS)}")
    official = tokenization == "official"
    ours = {
        "backbones": "SmolLM2-135M-Instruct, Gemma-3-270M, Qwen2.5-Coder-0.5B-Instruct (GGUF packages dequantized to "
                     "fp32, 2 CPU cores); Qwen2.5-Coder-0.5B-Instruct shares Qwen2.5-0.5B's architecture but is the "
                     "coder variant, instruction-tuned. The unembedding matrix whose SVD gives the filter's directions "
                     "is a Q8_0-quantized copy on all three (the GGUF files' output or tied embedding tensor; the other "
                     "weights are 4-5-bit), dequantized to fp32: its small singular directions carry that "
                     "quantization noise, the paper's fp16 matrix does not",
        "tasks": _tasks_text(suite),
        "PromptEOL template": f"the original `{get_prompt('prompteol').template}` (prompt `prompteol`); the official "
                              "code's variant is prompt `prompteol-summarize`",
        "tokenization": ("the same (tokenization 'official')" if official else
                         "the book's earlier runs (tokenization 'pieces'): the template's pieces and the text "
                         "tokenized apart for PromptEOL too, so a merge across a template boundary differs (SmolLM2: "
                         "`guitar` `.` `\"` where the official call gives `guitar` `.\"`); Echo adds BOS only where "
                         "the tokenizer does"),
        "truncation": ("PromptEOL: the text cut to its first and last halves so that the filled template fits 512 "
                       "tokens, then re-tokenized (the prompt is never cut; the split point differs from the "
                       "official 256/256 by the prompt's length); Echo: the same as the official" if official else
                       "the text's first and last tokens kept up to 512 tokens including the prompt; Echo's two "
                       "copies share that budget"),
        "scoring": ("the official protocol: as quoted" if protocol == "official" else
                    "mteb's evaluators on the raw embeddings and mteb's main scores (pair classification: the best "
                    "AP over cosine, dot, Euclidean and Manhattan); the official protocol is stored beside it and "
                    "compared on p2_main_table (it changes only clustering and pair classification)"),
    }
    same = {"tokenization": official, "truncation": False, "scoring": protocol == "official"}
    return pd.DataFrame([{"aspect": k, f"paper / official code ({OFFICIAL}, quoted)": QUOTED[k], "ours": v,
                          "deviates": "no" if same.get(k) else "yes"} for k, v in ours.items()])
