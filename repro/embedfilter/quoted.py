"""Numbers quoted from the EmbedFilter paper (arXiv 2606.07502: main table, mean over 49 MTEB datasets x 100;
ablation: a subset of tasks, Qwen2.5-0.5B, PromptEOL, ratio 2), as recorded in ../shared/papers/official-code-notes.md
from two independent secondary summaries that agree. Never computed here; labelled as quoted wherever shown."""

from __future__ import annotations

import pandas as pd

PAPER_SOURCE = "EmbedFilter (arXiv 2606.07502), quoted via two agreeing secondary summaries"
PAPER_DATASETS = 49  # the MTEB datasets the paper's main table averages (its official code's task list has 56)


PAPER_MAIN = [  # backbone, prompt, variant, score
    ("Qwen2.5-0.5B", "PromptEOL", "raw", 50.07), ("Qwen2.5-0.5B", "PromptEOL", "edge/2", 54.57),
    ("Qwen2.5-0.5B", "PromptEOL", "edge/4", 53.47), ("Qwen2.5-0.5B", "PromptEOL", "edge/8", 51.43),
    ("Qwen2.5-0.5B", "Echo", "raw", 46.03), ("Qwen2.5-0.5B", "Echo", "edge/2", 52.55),
    ("Llama-3.1-8B-Instruct", "PromptEOL", "raw", 55.13), ("Llama-3.1-8B-Instruct", "PromptEOL", "edge/2", 56.79),
    ("Llama-3.1-8B-Instruct", "Echo", "raw", 53.52), ("Llama-3.1-8B-Instruct", "Echo", "edge/2", 57.70),
    ("Llama-3.1-8B-Instruct", "Echo", "edge/4", 57.32), ("Llama-3.1-8B-Instruct", "Echo", "edge/8", 56.61),
    ("Mistral-7B-Instruct-v0.3", "PromptEOL", "raw", 49.47), ("Mistral-7B-Instruct-v0.3", "PromptEOL", "edge/2", 51.50),
    ("Mistral-7B-Instruct-v0.3", "Echo", "raw", 53.21), ("Mistral-7B-Instruct-v0.3", "Echo", "edge/2", 56.10),
]


PAPER_ABLATION = {"raw": 63.04, "truncate/2": 62.56, "rand/2": 63.27, "head/2": 60.34, "tail/2": 67.74,
                  "mid/2": 59.92, "edge/2": 69.48, "ideal/2": 68.52}  # Qwen2.5-0.5B, PromptEOL, ablation subset


def paper_main_table() -> pd.DataFrame:
    """The paper's published main-table numbers (quoted, labelled as such)."""
    frame = pd.DataFrame(PAPER_MAIN, columns=["backbone", "prompt", "variant", "score"])
    return frame.pivot_table(index=["backbone", "prompt"], columns="variant", values="score").reset_index()


def paper_gains(variant: str = "edge/2") -> pd.Series:
    """The paper's ``variant`` minus raw per (backbone, prompt) row of its main table (quoted numbers)."""
    table = paper_main_table().set_index(["backbone", "prompt"])
    return (table[variant] - table["raw"]).dropna()
