"""Paper 1's five designs under the declared budget rule: scores over seeds, the seed spread, verdicts that respect
it, paired tests inside each task, and budget curves (read from the result store only; nothing is trained here).

* :func:`converged_scores`: per-task scores (x100) of every stored (model, seed) run, with its stored records
  (for the in-task tests) and :func:`run_table`: each run's stopping step, selected step, examples, tokens and
  CPU time.
* :func:`seed_spread`: per model, the standard deviation over seeds of its mean score (all tasks and per
  category). A claim's difference smaller than the larger spread of its two models is **inconclusive**, never
  supported or contradicted (:func:`seeded_claims`).
* :func:`in_task_tests`: per task, the paired test of two models' stored scores of the same seed inside the task
  (:func:`repro.core.paired.paired_test`: pairs, queries, examples, documents).
* :func:`budget_curve` / :func:`budget_comparison`: scores at the shared budget grid (small suite) and, at each
  budget, the paired test of two models' difference (Wilcoxon over tasks, and the in-task tests counted).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from repro.core.comparison import claim_verdict
from repro.core.paired import paired_test
from repro.core.scoring import stored_per_task
from repro.core.stats import wilcoxon_over_tasks
from repro.core.tasks import TASKS
from repro.pooling_attention.instructions import TANG_YANG
from repro.pooling_attention.trained import converged_config
from repro.store.results import load_result
from repro.training.contrastive import RUNS_EXPERIMENT, TrainConfig
from repro.training.evaluation import SCORES_EXPERIMENT, instructions_key

SEEDS = (0, 1, 2)
EVAL_MAX_LENGTH = 512


def _identity(config: TrainConfig, **extra) -> dict:
    return {"train": config.identity(), "eval_max_length": EVAL_MAX_LENGTH, **extra}


def _frame(records: dict, **labels) -> pd.DataFrame:
    rows = []
    for task, record in records.items():
        score = float(np.mean([r["main_score"] for r in record["rows"]])) * 100
        rows.append({**labels, "task": task, "category": TASKS[task].category, "score": score})
    return pd.DataFrame(rows)


def converged_scores(backbone: str, models: Sequence, seeds: Sequence[int] = SEEDS, suite: str = "compact",
                     tasks: Sequence[str] | None = None, instructions: str | None = None, prompt: str = "none"
                     ) -> tuple[pd.DataFrame, dict]:
    """Stored per-task scores of the converged runs: a frame (model, seed, task, category, score x100) of the runs
    with every task of ``tasks`` stored, and the records keyed (model, seed, task) of every stored task.
    ``instructions``: the stored instruction variant's key (e.g. ``"tang-yang-<hash>"``) instead of plain inputs;
    ``prompt``: the runs trained and scored with that input format (``repro train --converged --prompt``)."""
    tasks = list(TASKS) if tasks is None else list(tasks)
    frames, records = [], {}
    for model in models:
        for seed in seeds:
            extra = {} if instructions is None else {"instructions": instructions}
            config = converged_config(backbone, model, seed, prompt=prompt)
            found = stored_per_task(SCORES_EXPERIMENT, _identity(config, **extra), suite, tasks)
            records.update({(model, seed, task): r for task, r in found.items()})
            if len(found) == len(tasks):  # a run with missing tasks would mix task sets in the means and spreads
                frames.append(_frame(found, model=model, seed=seed))
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["model", "seed", "task", "category", "score"])
    return frame, records


def instruction_comparison(backbone: str, models: Sequence, seeds: Sequence[int] = SEEDS,
                           suite: str = "compact") -> pd.DataFrame:
    """Per (model, seed) scored both ways on every task: the mean with plain inputs (as trained) and with Tang &
    Yang's E5-style task instructions before the query-side texts (the official evaluation's inputs), their
    difference (instructed minus plain, x100) and the Wilcoxon test over tasks."""
    plain, _ = converged_scores(backbone, models, seeds, suite)
    instructed, _ = converged_scores(backbone, models, seeds, suite, instructions=instructions_key(TANG_YANG))
    columns = ["model", "seed", "tasks", "plain", "instructed", "difference", "p (Wilcoxon)", "verdict"]
    rows = []
    for (model, seed), part in instructed.groupby(["model", "seed"]):
        base = plain[(plain.model == model) & (plain.seed == seed)]
        both = base.merge(part, on=["task", "category"], suffixes=(" plain", " instructed"))
        if both.empty:
            continue
        test = wilcoxon_over_tasks(both["score instructed"], both["score plain"])
        verdict = {"significant: first better": "instructions help",
                   "significant: second better": "instructions hurt"}.get(test["verdict"], test["verdict"])
        rows.append({"model": model, "seed": seed, "tasks": len(both), "plain": both["score plain"].mean(),
                     "instructed": both["score instructed"].mean(), "difference": test["mean_difference"],
                     "p (Wilcoxon)": test["p"], "verdict": verdict})
    return pd.DataFrame(rows, columns=columns)


def earlier_scores(backbone: str, models: Sequence, suite: str = "compact", tasks: Sequence[str] | None = None,
                   **earlier) -> pd.DataFrame:
    """Stored per-task scores of the earlier fixed-budget runs (TrainConfig fields ``earlier``, e.g. 150 steps of
    SNLI at a linearly decaying lr), as a frame (model, seed 0, task, category, score x100); read only."""
    tasks = list(TASKS) if tasks is None else list(tasks)
    frames = []
    for model in models:
        config = TrainConfig(backbone=backbone, model=model, **earlier)
        found = stored_per_task(SCORES_EXPERIMENT, _identity(config), suite, tasks)
        if found:
            frames.append(_frame(found, model=model, seed=config.seed))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["model", "seed", "task", "category", "score"])


def run_table(backbone: str, models: Sequence, seeds: Sequence[int] = SEEDS) -> pd.DataFrame:
    """Each stored converged run's budget: where it stopped, the dev-selected step, examples and tokens seen up
    to it, CPU hours of its training steps up to it, the run's wall hours (all steps and dev evaluations), and the
    dev signal (STS-B dev Spearman x100) at step 0 and at the selected step."""
    rows = []
    for model in models:
        for seed in seeds:
            config = converged_config(backbone, model, seed)
            record = load_result(RUNS_EXPERIMENT, {"train": config.identity()})
            if record is None:
                continue
            s = record["summary"]
            start = next(r["validation_sts"] for r in record["rows"] if r["step"] == 0 and "validation_sts" in r)
            rows.append({"model": model, "seed": seed, "stopped at": s["steps"], "early stop": s["stopped_early"],
                         "selected step": s["selected_step"], "examples": s["selected_examples_seen"],
                         "tokens": s["selected_tokens_seen"],
                         "CPU hours (to selected)": s["selected_train_cpu_seconds"] / 3600,
                         "wall hours (run: steps + dev evaluations)": (s["train_seconds"] + s.get("eval_seconds", 0)) / 3600,
                         "dev at step 0": start, "dev selected": s["selected_signal"]})
    return pd.DataFrame(rows)


def seed_spread(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model: the number of seeds and the standard deviation (ddof 1) over seeds of its mean score over
    all tasks and per category (NaN with one seed)."""
    rows = []
    for model, part in frame.groupby("model"):
        means = {"all tasks": part.groupby("seed")["score"].mean()}
        means.update({c: p.groupby("seed")["score"].mean() for c, p in part.groupby("category")})
        rows.append({"model": model, "seeds": part["seed"].nunique(),
                     **{c: float(m.std(ddof=1)) if len(m) > 1 else np.nan for c, m in means.items()}})
    return pd.DataFrame(rows).set_index("model")


def seed_averaged(frame: pd.DataFrame) -> pd.DataFrame:
    """rows (category, task) x columns model: the score averaged over the seeds each model has."""
    return frame.pivot_table(index=["category", "task"], columns="model", values="score", aggfunc="mean")


def seeded_claims(frame: pd.DataFrame, claims: Iterable[tuple]) -> pd.DataFrame:
    """Each ``(claim, a, b, category, expected)`` judged on seed-averaged scores (:func:`claim_verdict`, the
    Wilcoxon over tasks), then held to the seed spread: a difference smaller than the larger of the two models'
    spreads is "inconclusive (within the seed spread)", and a verdict from one seed says so."""
    wide, spread = seed_averaged(frame), seed_spread(frame)
    rows = []
    for claim in claims:
        _, a, b, category, _ = claim
        row = claim_verdict(wide, *claim)
        column = category or "all tasks"
        spreads = [spread.loc[m, column] if m in spread.index and column in spread else np.nan for m in (a, b)]
        seeds = min(int(spread.loc[m, "seeds"]) if m in spread.index else 0 for m in (a, b))
        row["seeds"] = seeds
        row["seed spread"] = float(np.nanmax(spreads)) if not np.all(np.isnan(spreads)) else np.nan
        difference = row["difference"]
        if row["verdict at our scale"] in ("supported", "contradicted", "not supported (no significant difference)"):
            if seeds < 2:
                row["verdict at our scale"] += " (one seed: spread unknown)"
            elif difference is not None and abs(difference) < row["seed spread"]:
                row["verdict at our scale"] = "inconclusive (within the seed spread)"
        rows.append(row)
    return pd.DataFrame(rows)


def in_task_tests(records: dict, a, b, seed: int = 0, n_resamples: int = 1000) -> pd.DataFrame:
    """Per task both models have (same seed): the paired test of ``a`` vs ``b`` inside the task."""
    rows = []
    tasks = sorted({t for (m, s, t) in records if m == a and s == seed} & {t for (m, s, t) in records
                                                                           if m == b and s == seed})
    for task in tasks:
        test = paired_test(records[(a, seed, task)], records[(b, seed, task)], n_resamples)
        rows.append({"comparison": f"{a} vs {b}", "seed": seed, **test})
    return pd.DataFrame(rows)


def budget_curve(backbone: str, model, seed: int = 0, suite: str = "small",
                 tasks: Sequence[str] | None = None) -> tuple[pd.DataFrame, dict]:
    """Stored scores of a run's budget points: (budget_step, examples, task, category, score x100), records
    keyed (budget_step, task)."""
    config = converged_config(backbone, model, seed)
    record = load_result(RUNS_EXPERIMENT, {"train": config.identity()})
    if record is None:
        return pd.DataFrame(columns=["model", "budget_step", "examples", "task", "category", "score"]), {}
    examples = {int(r["step"]): r["examples_seen"] for r in record["rows"]
                if "validation_sts" in r and r.get("examples_seen") is not None}
    frames, records = [], {}
    for step in sorted(examples):
        found = stored_per_task(SCORES_EXPERIMENT, _identity(config, budget_step=step), suite,
                                list(TASKS) if tasks is None else tasks)
        records.update({(step, t): r for t, r in found.items()})
        if found:
            frames.append(_frame(found, model=model, budget_step=step, examples=examples[step]))
    if not frames:
        return pd.DataFrame(columns=["model", "budget_step", "examples", "task", "category", "score"]), records
    return pd.concat(frames, ignore_index=True), records


def budget_comparison(curve_a: tuple[pd.DataFrame, dict], curve_b: tuple[pd.DataFrame, dict],
                      n_resamples: int = 500) -> pd.DataFrame:
    """At each budget step both runs were scored at: the mean difference a - b over tasks, the Wilcoxon over
    tasks (sign and p), and the in-task paired tests counted (a better / b better / not significant). The
    budget steps are the shared grid; a run's dev-selected step is compared at its own step if the other has it."""
    (fa, ra), (fb, rb) = curve_a, curve_b
    if fa.empty or fb.empty:
        return pd.DataFrame()
    a, b = fa["model"].iloc[0], fb["model"].iloc[0]
    rows = []
    for step in sorted(set(fa.budget_step) & set(fb.budget_step)):
        pa, pb = fa[fa.budget_step == step].set_index("task"), fb[fb.budget_step == step].set_index("task")
        common = sorted(set(pa.index) & set(pb.index))
        test = wilcoxon_over_tasks(pa.loc[common, "score"], pb.loc[common, "score"])
        inside = [paired_test(ra[(step, t)], rb[(step, t)], n_resamples)["verdict"] for t in common]
        rows.append({"budget step": step, "examples": int(pa["examples"].iloc[0]), "tasks": len(common),
                     f"mean {a}": pa.loc[common, "score"].mean(), f"mean {b}": pb.loc[common, "score"].mean(),
                     "difference": test["mean_difference"], "p (Wilcoxon over tasks)": test["p"],
                     "over tasks": test["verdict"].replace("first", str(a)).replace("second", str(b)),
                     f"tasks where {a} is better (in-task test)": inside.count("first better"),
                     f"tasks where {b} is better (in-task test)": inside.count("second better"),
                     "tasks not significant": sum(v not in ("first better", "second better") for v in inside)})
    return pd.DataFrame(rows)


def curve_seed(backbone: str, models: Sequence, seeds: Sequence[int], suite: str = "small") -> int | None:
    """The first of ``seeds`` whose runs of every model in ``models`` have budget points stored (a budget curve
    compares the checkpoints of runs with the same seed); None when no seed has them all."""
    for seed in seeds:
        if all(len(budget_curve(backbone, m, seed, suite)[0]) for m in models):
            return seed
    return None


def budget_verdict(table: pd.DataFrame) -> str:
    """Does the ranking change with the budget? From :func:`budget_comparison`'s table: the budgets where the
    Wilcoxon over tasks is significant, for which model, and whether a significant verdict ever reverses."""
    if table.empty:
        return "no budget shared by both runs is scored yet"
    verdicts = table["over tasks"]
    winners = {v.split(": ", 1)[1].removesuffix(" better") for v in verdicts if v.startswith("significant")}
    significant = table[verdicts.str.startswith("significant")]
    signs = np.sign(table["difference"]).astype(int)
    where = ", ".join(f"{int(s)} ({v.split(': ', 1)[1]})" for s, v in zip(significant["budget step"],
                                                                           significant["over tasks"]))
    head = (f"significant at {len(significant)} of {len(table)} budgets" + (f": step {where}" if where else ""))
    if len(winners) > 1:
        return head + "; the ranking reverses with the budget"
    sign_changes = int((signs.diff().fillna(0) != 0).sum())
    return (head + ("; no significant reversal" if winners else "; never significant")
            + (f" (the sign of the mean difference changes {sign_changes} time{'s' if sign_changes != 1 else ''})"
               if sign_changes else " (the same sign of the mean difference at every budget)"))
