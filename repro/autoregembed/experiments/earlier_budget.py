"""Paper 3's earlier fixed-budget verdicts beside the budget rule's (page ``p3_converged``, "at the earlier
budget"): the stored scores of the Tables 1-2 runs (150 stage-2 steps at one learning rate, one seed, no dev
selection) and their stage-2 claims, each matched with the verdict under the rule on what it compares."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from repro.autoregembed.config import AlignConfig
from repro.autoregembed.experiments.baselines import CONTRASTIVE, contrastive_config
from repro.autoregembed.experiments.converged import BASELINE, COMPRESSION, FINAL_SUITE, TASKS, stored_scores
from repro.training.budget_curves import task_frame


def earlier_scores(earlier: AlignConfig, suite: str = FINAL_SUITE, tasks: Sequence[str] = TASKS) -> pd.DataFrame:
    """The stored scores of the earlier fixed-budget Tables 1-2 runs from ``earlier`` (that page's stage-2
    config): compression only, AutoRegEmbed and the four contrastive baselines, each with every task stored
    (model, seed, task, category, score x100); read only."""
    runs = {"AutoRegEmbed": earlier, COMPRESSION: earlier.compress}
    runs.update({label: contrastive_config(label, earlier) for label in CONTRASTIVE})
    frames = []
    for label, config in runs.items():
        found = stored_scores(config, suite, tasks) if config is not None else {}
        if len(found) == len(tasks):
            frames.append(task_frame(found, model=label, seed=earlier.seed))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["model", "seed", "task", "category", "score"])


def with_earlier(earlier: pd.DataFrame, now: pd.DataFrame) -> pd.DataFrame:
    """The earlier page's claims about stage 2 (:func:`repro.autoregembed.claims.table_claims`) with the verdict
    under the budget rule beside each, matched on what is compared (compression only, or the contrastive baseline:
    the earlier page's best, here the dev-selected one) and the category."""
    def role(comparison: str) -> str:
        other = comparison.split(" vs ", 1)[1]
        return COMPRESSION if other == COMPRESSION else BASELINE if other in CONTRASTIVE or other == BASELINE else other

    verdicts = {(role(c), cat): v for c, cat, v in zip(now.get("comparison", []), now.get("category", []),
                                                        now.get("verdict", []))}
    table = earlier[["statement", "category", "comparison", "difference", "verdict"]]
    table = table[[role(c) in (COMPRESSION, BASELINE) for c in table["comparison"]]].copy()  # stage 2's claims
    table["under the budget rule"] = [verdicts.get((role(c), cat), "not scored yet")
                                      for c, cat in zip(table["comparison"], table["category"])]
    return table.reset_index(drop=True)
