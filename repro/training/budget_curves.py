"""Budget curves: scores at the log-spaced budget points of one constant-learning-rate run under the budget rule
(:func:`repro.training.budget.budget_points`), read from the result store, and at each budget the paired test of
two curves' difference (does the ranking change with the training budget?).

A curve is ``(frame, records)``: the frame has one row per (budget step, task) with columns ``model`` (the
curve's label), ``budget_step``, ``examples`` (examples seen at that step), ``task``, ``category`` and ``score``
(x100, subsets averaged); ``records`` are the stored per-task records keyed ``(budget_step, task)``, which the
in-task paired tests read.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from repro.core.paired import paired_test
from repro.core.scoring import stored_per_task
from repro.core.stats import wilcoxon_over_tasks
from repro.core.tasks import TASKS
from repro.verdicts.rule import FIRST_BETTER, SECOND_BETTER, SIGNIFICANT

CURVE_COLUMNS = ["model", "budget_step", "examples", "task", "category", "score"]


def task_frame(records: dict, **labels) -> pd.DataFrame:
    """Stored per-task records (task -> record) as rows (labels..., task, category, score x100)."""
    rows = []
    for task, record in records.items():
        score = float(np.mean([r["main_score"] for r in record["rows"]])) * 100
        rows.append({**labels, "task": task, "category": TASKS[task].category, "score": score})
    return pd.DataFrame(rows)


def stored_curve(scores_experiment: str, identity: dict, run_rows: list[dict] | None, suite: str,
                 tasks: Sequence[str], label) -> tuple[pd.DataFrame, dict]:
    """The stored budget points of one run: ``identity`` + ``budget_step`` in ``scores_experiment`` at every
    evaluated step of the run's logged ``run_rows`` (its training record's rows; None: the run is not stored)
    whose scores cover every task of ``tasks``."""
    examples = {int(r["step"]): r["examples_seen"] for r in run_rows or []
                if "validation_sts" in r and r.get("examples_seen") is not None}
    frames, records = [], {}
    for step in sorted(examples):
        found = stored_per_task(scores_experiment, {**identity, "budget_step": step}, suite, tasks)
        if len(found) == len(tasks):  # a step scored on some tasks only would mix task sets along the curve
            records.update({(step, t): r for t, r in found.items()})
            frames.append(task_frame(found, model=label, budget_step=step, examples=examples[step]))
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=CURVE_COLUMNS)), records


def flat_curve(records: dict, steps: dict[int, int], label) -> tuple[pd.DataFrame, dict]:
    """A method that does not train in this run (e.g. the run's own starting point), at every budget step of
    ``steps`` (step -> examples) with the same stored per-task ``records`` (task -> record)."""
    if not records or not steps:
        return pd.DataFrame(columns=CURVE_COLUMNS), {}
    frame = pd.concat([task_frame(records, model=label, budget_step=s, examples=n) for s, n in steps.items()],
                      ignore_index=True)
    return frame, {(s, t): r for s in steps for t, r in records.items()}


def curve_steps(curve: tuple[pd.DataFrame, dict]) -> dict[int, int]:
    """A curve's budget steps -> examples seen."""
    frame = curve[0]
    return {int(s): int(n) for s, n in frame.groupby("budget_step")["examples"].first().items()}


def budget_comparison(curve_a: tuple[pd.DataFrame, dict], curve_b: tuple[pd.DataFrame, dict],
                      n_resamples: int = 500) -> pd.DataFrame:
    """At each budget step both runs were scored at: the mean difference a - b over tasks, the Wilcoxon over
    tasks (sign and p), and the in-task paired tests counted (columns ``in-task: a better``, ``in-task: b better``
    and ``in-task: n.s.``, the tasks where neither is significantly better). The
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
                     "difference": test["mean_difference"], "p (over tasks)": test["p"],
                     "over tasks": test["verdict"].replace("first", str(a)).replace("second", str(b)),
                     f"in-task: {a} better": inside.count(FIRST_BETTER),
                     f"in-task: {b} better": inside.count(SECOND_BETTER),
                     "in-task: n.s.": sum(v not in (FIRST_BETTER, SECOND_BETTER) for v in inside)})
    return pd.DataFrame(rows)


def budget_verdict(table: pd.DataFrame) -> str:
    """Does the ranking change with the budget? From :func:`budget_comparison`'s table: the budgets where the
    Wilcoxon over tasks is significant, for which model, and whether a significant verdict ever reverses."""
    if table.empty:
        return "no budget shared by both runs is scored yet"
    verdicts = table["over tasks"]
    winners = {v.removeprefix(SIGNIFICANT).removesuffix(" better") for v in verdicts if v.startswith(SIGNIFICANT)}
    significant = table[verdicts.str.startswith(SIGNIFICANT)]
    signs = np.sign(table["difference"]).astype(int)
    signs = signs[signs != 0]  # a difference of exactly 0 has no sign: it changes nothing
    where = ", ".join(f"{int(s)} ({v.split(': ', 1)[1]})" for s, v in zip(significant["budget step"],
                                                                           significant["over tasks"]))
    head = (f"significant at {len(significant)} of {len(table)} budgets" + (f": step {where}" if where else ""))
    if len(winners) > 1:
        return head + "; the ranking reverses with the budget"
    sign_changes = int((signs.diff().fillna(0) != 0).sum())
    return (head + ("; no significant reversal" if winners else "; never significant")
            + (f" (the sign of the mean difference changes {sign_changes} time{'s' if sign_changes != 1 else ''})"
               if sign_changes else " (the same sign of the mean difference at every budget)" if len(signs)
               else " (no non-zero mean difference)"))
