"""The declared margins by metric family, beside what justifies them: the run-to-run SD of a design's category mean
measured on the stored converged runs (Paper 1's five designs on its first backbone, under the budget rule), as the
glossary and the ledger page show them. The margins themselves are declared in :mod:`repro.verdicts.rule`
(:data:`~repro.verdicts.rule.MARGINS`); this module only reads the stored runs to show them beside their reasons."""

from __future__ import annotations

import pandas as pd

from repro.autoregembed.experiments import converged, independent
from repro.crosspaper.ledger_paper2 import edge_task_differences
from repro.pooling_attention.claims import TABLE_CLAIMS
from repro.pooling_attention.converged import converged_scores
from repro.verdicts.rule import (
    MARGIN,
    MARGIN_REASONS,
    MARGINS,
    METRICS,
    STATISTIC_MARGINS,
    STATISTIC_REASONS,
    UNITS,
    margin_for,
)

MODELS = (1, 2, 3, 4, 5)


def run_sds(backbone: str = "smollm2-135m", models=MODELS) -> pd.DataFrame:
    """Per (design, category): the SD over training runs of the run's mean over the category's tasks, and the runs
    and tasks it rests on, from the stored converged runs (none stored: an empty frame)."""
    frame, _ = converged_scores(backbone, list(models))
    if not len(frame):
        return pd.DataFrame(columns=["model", "category", "run SD", "runs", "tasks"])
    means = frame.groupby(["model", "seed", "category"])["score"].mean()
    out = means.groupby(["model", "category"]).agg(["std", "count"]).rename(columns={"std": "run SD", "count": "runs"})
    tasks = frame.groupby("category")["task"].nunique()
    return out.reset_index().assign(tasks=lambda d: d["category"].map(tasks))


def margins_table(backbone: str = "smollm2-135m") -> pd.DataFrame:
    """One row per metric family: each task category (its metric, the declared margin, the measured run-to-run SD
    range over the designs, and the runs and tasks behind it, and the reason for the margin), each statistic that is
    not a score (its unit, margin and reason), and a last row for means over mixed categories."""
    sds = run_sds(backbone)
    rows = []
    for category, margin in MARGINS.items():
        part = sds[sds["category"] == category].dropna(subset=["run SD"])
        measured = (f"{part['run SD'].min():.2f}-{part['run SD'].max():.2f} over {len(part)} designs "
                    f"({int(part['runs'].min())}-{int(part['runs'].max())} runs each, {int(part['tasks'].iloc[0])} "
                    f"task{'s' if int(part['tasks'].iloc[0]) != 1 else ''})" if len(part) else "not measured here")
        rows.append({"metric family": category, "metric": f"{METRICS[category]} x100", "margin": margin,
                     f"run-to-run SD measured ({backbone}, converged designs)": measured,
                     "why this margin": MARGIN_REASONS[category]})
    for family, margin in STATISTIC_MARGINS.items():  # statistics that are not scores, each in its own unit
        rows.append({"metric family": family, "metric": UNITS[family], "margin": margin,
                     f"run-to-run SD measured ({backbone}, converged designs)": "- (deterministic states)",
                     "why this margin": STATISTIC_REASONS[family]})
    rows.append({"metric family": "a mean over mixed categories", "metric": "points x100", "margin": MARGIN,
                 f"run-to-run SD measured ({backbone}, converged designs)": "-",
                 "why this margin": "the smallest of the score families' margins"})
    return pd.DataFrame(rows)


def measured_spreads(backbone: str = "smollm2-135m", profile: str = "standard") -> list[dict]:
    """The spreads the engine's calibration by test type simulates (:func:`repro.verdicts.calibration.
    calibration_by_test`), measured on the stored results: for the runs tests, the pairs of Paper 1's converged
    designs its statements compare, in the category they compare them on (the pair with the smallest SDs, the
    most unequal pair and the pair with the largest SDs); for the Wilcoxon over tasks, the SD of Paper 2's per-task
    edge/2 - raw differences (the smallest and the largest over backbones x prompts)."""
    sds = run_sds(backbone).set_index(["model", "category"])
    pairs = []
    for _, a, b, category, _ in TABLE_CLAIMS:
        if category and (a, category) in sds.index and (b, category) in sds.index:
            first, second = sds.loc[(a, category)], sds.loc[(b, category)]
            pairs.append({"what": f"{backbone} model {a} vs {b}, {category}", "units": "runs",
                          "n first": int(first["runs"]), "n second": int(second["runs"]),
                          "SD first": float(first["run SD"]), "SD second": float(second["run SD"]),
                          "margin": margin_for(category)})
    pairs = list({p["what"]: p for p in pairs}.values())
    chosen = []
    if pairs:
        total = sorted(pairs, key=lambda p: p["SD first"] ** 2 + p["SD second"] ** 2)
        ratio = max(pairs, key=lambda p: max(p["SD first"], p["SD second"]) / min(p["SD first"], p["SD second"]))
        chosen = list({p["what"]: p for p in (total[0], ratio, total[-1])}.values())
    differences = edge_task_differences(profile)
    if len(differences):
        per_run = differences.groupby(["backbone", "prompt"])["difference"].agg(["std", "count"])
        for label, (run, row) in (("smallest", min(per_run.iterrows(), key=lambda r: r[1]["std"])),
                                  ("largest", max(per_run.iterrows(), key=lambda r: r[1]["std"]))):
            chosen.append({"what": f"Paper 2 edge/2 - raw per task, {run[0]} {run[1]} ({label} SD)", "units": "tasks",
                           "n first": int(row["count"]), "n second": int(row["count"]), "SD first": float(row["std"]),
                           "SD second": 0.0})
    return chosen


def chain_spread(backbone: str = "smollm2-135m") -> float:
    """The SD across Paper 3's independent chains of their compression only's STS average (x100, the budget-rule
    page's final suite): the spread a stage 1 shares with every run trained from it, which the paired runs test
    cancels (NaN with fewer than two chains stored)."""
    chains, _ = independent.final_scores(backbone=backbone)
    if chains.empty:
        return float("nan")
    sts = chains[(chains["model"] == converged.COMPRESSION) & (chains["category"] == "STS")]
    return float(sts.groupby("seed")["score"].mean().std(ddof=1))
