"""Combinations none of the three papers tried, each a paired comparison of two recipes on the same tasks.

* "Does EmbedFilter's training-free gain survive training?": EmbedFilter edge/2 applied to Paper 1's trained
  models 1 and 5 (the shipped weights of one seed, :mod:`repro.book.shipped`), against the same weights without
  the filter; next to it, the same filter on the untrained PromptEOL and Echo states (Paper 2's own setting).

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


def combination_table(suite: str = SUITE) -> pd.DataFrame:
    """One row per pair: tasks scored by both, the two means (x100), the mean difference, the Wilcoxon test over
    tasks and its verdict; pairs with a missing side say which command computes it (read only)."""
    rows = []
    for question, base, combined in PAIRS:
        a, b = pair_scores(base, suite), pair_scores(combined, suite)
        both = a.merge(b, on=["task", "category"], suffixes=("_base", "_combined"))
        row = {"question": question, "base": base, "combined": combined, "tasks": len(both),
               "base mean": both["score_base"].mean() if len(both) else np.nan,
               "combined mean": both["score_combined"].mean() if len(both) else np.nan}
        if len(both) < len(TASKS):
            missing = [r for r, f in ((base, a), (combined, b)) if len(f) < len(TASKS)]
            row |= {"difference": np.nan, "p (Wilcoxon)": np.nan,
                    "verdict": "not computed: " + "; ".join(f"repro evaluate --recipe {r} --suite {suite}"
                                                             for r in missing)}
        else:
            test = wilcoxon_over_tasks(both["score_combined"], both["score_base"])
            row |= {"difference": test["mean_difference"], "p (Wilcoxon)": test["p"],
                    "verdict": {"significant: first better": "the filter helps",
                                "significant: second better": "the filter hurts"}.get(test["verdict"],
                                                                                      "no significant difference")}
        rows.append(row)
    return pd.DataFrame(rows)


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
