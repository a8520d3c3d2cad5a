"""Paper 2's claims, tested: every filter and baseline against raw (Wilcoxon over tasks), the best variant against
every other, and paired bootstraps over sentence pairs inside each STS task."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from repro.core.stats import paired_bootstrap_spearman, wilcoxon_over_tasks
from repro.core.tasks import read_task
from repro.embedfilter.sweep import stored_pair_similarities


def tests_against_raw(scores: pd.DataFrame, variants: Sequence[str]) -> pd.DataFrame:
    """Per backbone x prompt: each variant vs raw, Wilcoxon signed-rank over tasks (two-sided)."""
    tests = tests_against(scores, variants, "raw")
    return tests.drop(columns="against").rename(columns={"mean difference": "mean difference vs raw"})


def tests_against(scores: pd.DataFrame, variants: Sequence[str], baseline: str) -> pd.DataFrame:
    """Per backbone x prompt: each variant vs ``baseline``, Wilcoxon signed-rank over tasks (two-sided)."""

    per_task = scores.groupby(["backbone", "prompt", "variant", "task"], as_index=False)["main_score"].mean()
    rows = []
    for (b, p), part in per_task.groupby(["backbone", "prompt"]):
        wide = part.pivot_table(index="task", columns="variant", values="main_score") * 100
        for v in variants:
            if v == baseline or v not in wide or baseline not in wide:
                continue
            t = wilcoxon_over_tasks(wide[v], wide[baseline])
            rows.append({"backbone": b, "prompt": p, "variant": v, "against": baseline, "tasks": t["n"],
                         "mean difference": round(t["mean_difference"], 2),
                         "wins": int((wide[v] > wide[baseline]).sum()), "losses": int((wide[v] < wide[baseline]).sum()),
                         "p (Wilcoxon)": t["p"],
                         "verdict": t["verdict"].replace("first", v).replace("second", baseline)})
    return pd.DataFrame(rows, columns=["backbone", "prompt", "variant", "against", "tasks", "mean difference", "wins",
                                       "losses", "p (Wilcoxon)", "verdict"])


def best_variant_tests(scores: pd.DataFrame, candidate: str, others: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Is ``candidate`` the best variant? It against each of ``others`` (Wilcoxon over tasks), per backbone x
    prompt, and a verdict: supported only if it is significantly better than every other one."""
    tests = pd.concat([tests_against(scores, [candidate], other) for other in others if other != candidate],
                      ignore_index=True)
    better = tests["verdict"].eq(f"significant: {candidate} better")
    worse = tests["verdict"].str.startswith("significant") & ~better
    summary = tests.assign(better=better, worse=worse).groupby(["backbone", "prompt"]).agg(
        compared=("against", "size"), significantly_better=("better", "sum"), significantly_worse=("worse", "sum"))
    summary[f"verdict ({candidate} is the best)"] = [
        "supported" if r.significantly_better == r.compared else
        ("contradicted" if r.significantly_worse else "not supported at this scale") for r in summary.itertuples()]
    return tests, summary


def bootstrap_against_raw(runs: Sequence[tuple[str, str]], scores: pd.DataFrame, variants: Sequence[str],
                          suite: str) -> pd.DataFrame:
    """Per STS task, each variant (not raw) of each (backbone, prompt) run against raw: a paired bootstrap over
    the task's sentence pairs (Spearman recomputed on each resample), from the stored per-pair similarities."""
    sims = stored_pair_similarities(suite)
    rows = []
    for (b, p, task, v), values in sims.items():
        if ((b, p) not in runs or task not in set(scores.task) or v not in variants or v == "raw"
                or (b, p, task, "raw") not in sims):
            continue
        t = paired_bootstrap_spearman(read_task(task, suite)["test"]["score"], values, sims[(b, p, task, "raw")])
        rows.append({"backbone": b, "prompt": p, "variant": v, "task": task, "verdict": t["verdict"]})
    return pd.DataFrame(rows)


def bootstrap_summary(boot: pd.DataFrame) -> pd.DataFrame:
    """Per (backbone, prompt, variant): in how many STS tasks the variant is significantly better / worse."""
    summary = boot.assign(better=boot.verdict.eq("first better"), worse=boot.verdict.eq("second better"))
    summary = summary.groupby(["backbone", "prompt", "variant"])[["better", "worse"]].sum()
    summary["STS tasks"] = boot.groupby(["backbone", "prompt", "variant"]).size()
    return summary.astype(int)
