"""Markdown tables from the committed result store (what the README and the book show).

    python -m repro.book.report
"""

from __future__ import annotations

import pandas as pd

from repro.core.reference import EXPERIMENT as REFERENCE
from repro.core.reference import PUBLISHED_SOURCE, comparison_table
from repro.pooling_attention.layerwise import EXPERIMENT as LAYERWISE
from repro.store.results import all_results


def reference_table() -> str:
    records = all_results(REFERENCE, where=lambda p: p["suite"] == "full")
    if not records:
        return "(no stored reference result: run `python -m repro.core.reference`)"
    record = records[-1]
    table = comparison_table(record)
    mean = table[["ours (x100)", "MTEB published (quoted)", "difference"]].mean().round(2)
    table.loc[len(table)] = ["mean", *mean.tolist()]
    seconds = record["timings"].get("seconds", float("nan"))
    return (table.to_markdown(index=False) + f"\n\nall-MiniLM-L6-v2, full STS test sets (nothing capped), "
            f"cosine Spearman x100, evaluated in {seconds:.0f} s. Published: {PUBLISHED_SOURCE}.")


def layerwise_table(backbone: str = "smollm2-135m", suite: str = "standard") -> str:
    records = [r for r in all_results(LAYERWISE)
               if r["params"]["backbone"] == backbone and r["params"]["suite"] == suite]
    if not records:
        return f"(no stored layerwise result for {backbone} on {suite})"
    frames = []
    for r in records:
        frame = pd.DataFrame(r["rows"])
        frame["seconds"] = r["timings"]["task_seconds"]
        frame["tokens, upper bound"] = r["timings"]["tokens_upper_bound"]
        frames.append(frame)
    df = pd.concat(frames)
    table = df.pivot_table(index=["category", "task"], columns="pooling", values="main_score", aggfunc="first")
    table = (table * 100).round(2)
    info = df.groupby("task")[["seconds", "tokens, upper bound"]].first().round(0)
    table = table.join(info, on="task").reset_index()
    layers = [int(x) for x in sorted(df["layer"].unique())]
    total = info["seconds"].sum()
    return (table.to_markdown(index=False) + f"\n\n{backbone}, layer(s) {layers} (hidden-state index; the last is "
            f"the final post-norm state), prompt `none` (text + EOS), suite `{suite}`; main score x100 "
            f"(Spearman, accuracy, V-measure, max AP, nDCG@10). `seconds`: wall time of the task (encoding all "
            f"{records[0]['params'].get('encode', {}).get('layers') or 'the'} hidden states once + mteb's evaluators), "
            f"total {total / 60:.1f} min. `tokens, upper bound`: tokens of every text in the task's capped files "
            f"(classification encodes only mteb's undersampled training examples, far fewer).")


def main():
    print("## Harness check: all-MiniLM-L6-v2\n")
    print(reference_table())
    print("\n## smollm2-135m on the standard suite\n")
    print(layerwise_table())


if __name__ == "__main__":
    main()
