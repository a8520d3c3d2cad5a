"""Combinations none of the three papers tried, each a paired comparison of two recipes on the same tasks.

* "Does EmbedFilter's training-free gain survive training?": EmbedFilter edge/2 applied to Paper 1's trained
  models 1 and 5 (the shipped weights of one seed, :mod:`repro.book.shipped`), against the same weights without
  the filter; next to it, the same filter on the untrained PromptEOL and Echo states (Paper 2's own setting).
* "PromptEOL or no prompt as model 1's input format?": Paper 1's model 1 trained and scored with PromptEOL's
  template (``repro train --converged --model 1 --prompt prompteol``) against the same design trained without a
  prompt, on the seeds both have (a verdict about the training recipe, so held to model 1's seed spread).

Both sides of a trained pair are scored by :func:`repro.book.recipes.evaluate_recipe` on all 19 tasks at ``compact``
caps from the same (shipped) weights (stored in ``results/recipe_scores``; a trained model's embeddings are cached, so
its filtered variant never re-encodes); the untrained pairs read the EmbedFilter sweeps' scores.
:func:`combination_table` reads the stored scores only and tests each pair with the Wilcoxon signed-rank test over
tasks (two-sided, p < 0.05): a verdict about these weights (one training seed), not about the training recipe.

    python -m repro.book.combinations            # computes the missing scores (about 20 min per trained model)
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from repro.book.recipes import TRAINED_RECIPES, evaluate_recipe, evaluated_scores, parse_recipe, recipe_scores
from repro.core.stats import wilcoxon_over_tasks
from repro.core.tasks import TASKS
from repro.pooling_attention.converged import SEEDS, converged_scores, seed_spread

SUITE = "compact"
# (question, base recipe, combined recipe); the first two are the combinations, the last two their reference
PAIRS = [
    ("EmbedFilter edge/2 on trained Paper 1 model 1", "smollm2-135m/p1-model1", "smollm2-135m/p1-model1+edge/2"),
    ("EmbedFilter edge/2 on trained Paper 1 model 5", "smollm2-135m/p1-model5", "smollm2-135m/p1-model5+edge/2"),
    ("EmbedFilter edge/2 on untrained PromptEOL (Paper 2)", "smollm2-135m/prompteol", "smollm2-135m/prompteol+edge/2"),
    ("EmbedFilter edge/2 on untrained Echo (Paper 2)", "smollm2-135m/echo", "smollm2-135m/echo+edge/2"),
]


def pair_scores(recipe: str, suite: str = SUITE) -> pd.DataFrame:
    """A recipe's per-task scores for a pair: a trained recipe's from ``repro evaluate --recipe`` only (both sides
    from the same weights), a training-free recipe's from wherever they are stored."""
    if parse_recipe(recipe)[1] in TRAINED_RECIPES:
        return evaluated_scores(recipe, suite)
    return recipe_scores(recipe, suite)[0]


DELTA = "difference, "  # prefix of the per-category difference columns (combined minus base, x100)
PROMPT_MODEL, PROMPT = 1, "prompteol"  # the input-format combination: Paper 1's model 1 trained with PromptEOL
PROMPT_QUESTION = "PromptEOL vs no prompt as trained Paper 1 model 1's input format"


def _compared(row: dict, base: pd.DataFrame, combined: pd.DataFrame, helps: str, hurts: str) -> dict:
    """``row`` completed with the tasks both frames have, their means, and the Wilcoxon test over tasks."""
    both = base.merge(combined, on=["task", "category"], suffixes=("_base", "_combined"))
    row |= {"tasks": len(both), "base mean": both["score_base"].mean() if len(both) else np.nan,
            "combined mean": both["score_combined"].mean() if len(both) else np.nan,
            "difference": np.nan, "p (Wilcoxon)": np.nan}
    if len(both) == len(TASKS):
        by = (both["score_combined"] - both["score_base"]).groupby(both["category"]).mean()
        row |= {f"{DELTA}{category}": difference for category, difference in by.items()}
        test = wilcoxon_over_tasks(both["score_combined"], both["score_base"])
        row |= {"difference": test["mean_difference"], "p (Wilcoxon)": test["p"],
                "verdict": {"significant: first better": helps, "significant: second better": hurts}.get(
                    test["verdict"], "no significant difference")}
    return row


def prompt_row(backbone: str = "smollm2-135m", suite: str = SUITE, seeds=SEEDS) -> dict:
    """Model 1 trained with PromptEOL vs without a prompt, per task averaged over the seeds both have; a
    difference within model 1's seed spread (no prompt, every seed stored) is inconclusive."""
    plain, _ = converged_scores(backbone, [PROMPT_MODEL], seeds, suite)
    prompted, _ = converged_scores(backbone, [PROMPT_MODEL], seeds, suite, prompt=PROMPT)
    shared = sorted(set(plain.seed) & set(prompted.seed)) if len(plain) and len(prompted) else []
    label = f"{backbone}/p1-model{PROMPT_MODEL} trained, seed{'s' if len(shared) > 1 else ''} " + (
        ", ".join(map(str, shared)) or "none stored")
    row = {"question": PROMPT_QUESTION, "base": f"{label}, no prompt", "combined": f"{label}, {PROMPT}"}
    if not shared:
        seed = next(iter(sorted(set(plain.seed))), 1)
        return _compared(row, plain.iloc[:0], prompted.iloc[:0], "", "") | {
            "verdict": f"not computed: python -m repro.pooling_attention.trained --converged --backbone {backbone} "
                       f"--model {PROMPT_MODEL} --seed {seed} --prompt {PROMPT} --suite {suite}"}

    def averaged(frame):
        return frame[frame.seed.isin(shared)].groupby(["task", "category"], as_index=False)["score"].mean()

    row = _compared(row, averaged(plain), averaged(prompted), "PromptEOL helps", "PromptEOL hurts")
    spread = seed_spread(plain).loc[PROMPT_MODEL, "all tasks"]
    if row["verdict"] != "no significant difference":
        if np.isnan(spread):
            row["verdict"] += " (one seed of model 1: spread unknown)"
        elif abs(row["difference"]) < spread:
            row["verdict"] = f"inconclusive (within model 1's seed spread, {spread:.2f})"
    return row


def combination_table(suite: str = SUITE, backbone: str = "smollm2-135m") -> pd.DataFrame:
    """One row per pair: tasks scored by both, the two means (x100), the mean difference, the Wilcoxon test over
    tasks and its verdict; pairs with a missing side say which command computes it (read only)."""
    rows = []
    for question, base, combined in PAIRS:
        a, b = pair_scores(base, suite), pair_scores(combined, suite)
        row = _compared({"question": question, "base": base, "combined": combined}, a, b,
                        "the filter helps", "the filter hurts")
        if row["tasks"] < len(TASKS):
            missing = [r for r, f in ((base, a), (combined, b)) if len(f) < len(TASKS)]
            row["verdict"] = "not computed: " + "; ".join(f"repro evaluate --recipe {r} --suite {suite}"
                                                          for r in missing)
        rows.append(row)
    rows.append(prompt_row(backbone, suite))
    return pd.DataFrame(rows)


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def filter_summary(table: pd.DataFrame) -> str:
    """One sentence: does the filter's training-free gain survive training (from :func:`combination_table`)."""
    filtered = table[table.question.str.startswith("EmbedFilter")]
    trained = filtered[filtered.base.str.contains("/p1-model")]
    untrained = filtered[~filtered.base.str.contains("/p1-model")]
    if len(filtered) == 0 or filtered["difference"].isna().any():
        return "Not every EmbedFilter pair is scored yet (the table names what computes the rest)."

    def listed(part):
        return "; on ".join(f"{r['question'].split(' on ')[1]}: {r['difference']:+.2f} ({_p(r['p (Wilcoxon)'])}, "
                         f"{r['verdict']})" for _, r in part.iterrows())

    helped = {v == "the filter helps" for v in trained.verdict}
    if helped == {True}:
        outcome = "the training-free gain survives training on both trained models"
    elif True in helped:
        outcome = "the training-free gain survives training on one trained model only"
    else:
        outcome = ("the training-free gain does not survive training: the filter helps neither trained model"
                   if (untrained.verdict == "the filter helps").all() else
                   "the filter helps neither the trained models nor every untrained one")
    return (f"EmbedFilter edge/2 minus the same embedding without it, mean over {int(filtered.tasks.min())} tasks: "
            f"on {listed(untrained)}; on {listed(trained)}. At this scale (one training seed), {outcome}.")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", default=SUITE)
    args = parser.parse_args(argv)
    for _, base, combined in PAIRS:
        for recipe in (base, combined):
            if len(pair_scores(recipe, args.suite)) < len(TASKS):
                evaluate_recipe(recipe, args.suite)
    print(combination_table(args.suite).round(3).to_string())


if __name__ == "__main__":
    main()
