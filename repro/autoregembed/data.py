"""AutoRegEmbed's training data: stage 1's instruction (or autoencoding) examples and stage 2's triplets."""

from __future__ import annotations

import json
import random

from repro.autoregembed.config import AUTOENCODE_FILE, INSTRUCTION_FILES, STAGE1_DATA, AlignConfig
from repro.store.paths import data_dir
from repro.training.data import read_triplets, split_triplets, subset


def read_instructions() -> list[dict]:
    """Stage-1 examples ``{context, instruction, output}`` from the data folder's instruction sets (T0
    prompts carry their instruction inside the prompt, so their ``instruction`` is empty)."""
    rows = []
    for rel in INSTRUCTION_FILES:
        path = data_dir() / rel
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found")
        with open(path) as handle:  # not splitlines(): texts contain U+2028 and friends
            items = [json.loads(line) for line in handle if line.strip()]
        for item in items:
            if "prompt" in item:
                rows.append({"context": item["prompt"], "instruction": "", "output": item["completion"]})
            else:
                for instance in item["instances"]:
                    rows.append({"context": instance["input"], "instruction": item["instruction"],
                                 "output": instance["output"]})
    rows = [r for r in rows if r["output"].strip()]
    random.Random(0).shuffle(rows)
    return rows


def read_stage1(data: str = "instruction") -> list[dict]:
    """Stage-1 examples ``{context, instruction, output}`` of ``data`` (:data:`STAGE1_DATA`), shuffled with a
    fixed seed (the first ``validation_examples`` are held out)."""
    if data == "instruction":
        return read_instructions()
    if data != "autoencode":
        raise ValueError(f"unknown stage-1 data '{data}'; valid: {', '.join(STAGE1_DATA)}")
    path = data_dir() / AUTOENCODE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    with open(path) as handle:
        texts = [json.loads(line)["text"] for line in handle if line.strip()]
    rows = [{"context": t, "instruction": "", "output": t} for t in texts if t.strip()]
    random.Random(0).shuffle(rows)
    return rows


def read_align_triplets(name: str) -> list[dict]:
    if name == "nli":
        return read_triplets("nli")
    path = data_dir() / "train/medi_nli/medi_nli.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    with open(path) as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [{"query": r["anchor"], "positive": r["positive"], "negative": r["negative"]} for r in rows]


def split_align(config: AlignConfig) -> tuple[list[dict], list[dict]]:
    """Training triplets (a seeded subset of ``train_examples`` if set) and held-out triplets (by anchor)."""

    if config.data in ("nli", "nli-medi"):  # the contrastive trainer's split (by anchor), so baselines match
        train_rows, held = split_triplets(config.data, config.validation_triplets, config.seed)
    else:
        rows = read_align_triplets(config.data)
        cut = min(config.validation_triplets, len(rows) // 5)
        held, train_rows = rows[:cut], rows[cut:]
    train_rows = subset(train_rows, config.train_examples, config.seed)
    return train_rows, held
