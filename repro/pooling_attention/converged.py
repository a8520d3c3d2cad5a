"""Paper 1's five designs under the declared budget rule: scores over seeds, the seed spread, paired tests inside
each task, and budget curves (read from the result store only; nothing is trained here).

* :func:`converged_scores`: per-task scores (x100) of every stored (model, seed) run, with its stored records
  (for the in-task tests) and :func:`run_table`: each run's stopping step, selected step, examples, tokens and
  CPU time.
* The seed spread and the verdicts, with the training runs as units, are :mod:`repro.verdicts.seeds`'s.
* :func:`repro.verdicts.seeds.in_task_tests`: per task, the paired test of two models' stored scores of the same seed
  inside the task (pairs, queries, examples, documents).
* :func:`budget_curve`: scores at the budget grid (small suite); :mod:`repro.training.budget_curves` compares two
  curves at each budget (Wilcoxon over tasks, and the in-task tests counted).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from repro.core.scoring import stored_per_task
from repro.core.stats import wilcoxon_over_tasks
from repro.core.tasks import TASKS
from repro.pooling_attention.instructions import TANG_YANG
from repro.pooling_attention.trained import converged_config
from repro.store.fingerprint import weights_digest
from repro.store.results import load_result
from repro.training.budget import run_budget
from repro.training.budget_curves import stored_curve, task_frame
from repro.training.contrastive import RUNS_EXPERIMENT, TrainConfig, run_spec
from repro.training.evaluation import SCORES_EXPERIMENT, instructions_key, score_identity
from repro.verdicts.rule import FIRST_BETTER, SECOND_BETTER, SIGNIFICANT

SEEDS = (0, 1, 2, 3, 4)  # smollm2-135m: five runs per design (gemma3-270m: the first three)
EVAL_MAX_LENGTH = 512


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
            found = stored_per_task(SCORES_EXPERIMENT, score_identity(config, EVAL_MAX_LENGTH, **extra), suite, tasks)
            records.update({(model, seed, task): r for task, r in found.items()})
            if len(found) == len(tasks):  # a run with missing tasks would mix task sets in the means and spreads
                frames.append(task_frame(found, model=model, seed=seed))
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["model", "seed", "task", "category", "score"])
    return frame, records


def complete_records(stored: tuple[pd.DataFrame, dict]) -> dict:
    """:func:`converged_scores`' records of the runs with every task stored (the runs its frame holds): a run
    only partly scored (e.g. its old scores while it is retrained) never enters a paired test inside a task."""
    frame, records = stored
    complete = _complete_runs(frame)
    return {key: record for key, record in records.items() if key[:2] in complete}


def _complete_runs(frame: pd.DataFrame) -> set:
    """The (model, seed) runs of :func:`converged_scores`' frame: those with every task stored."""
    return set(zip(frame["model"], frame["seed"])) if len(frame) else set()


def instruction_comparison(backbone: str, models: Sequence, seeds: Sequence[int] = SEEDS,
                           suite: str = "compact", tasks: Sequence[str] | None = None) -> pd.DataFrame:
    """Per (model, seed) scored both ways on every task: the mean with plain inputs (as trained) and with Tang &
    Yang's E5-style task instructions before the query-side texts (the official evaluation's inputs), their
    difference (instructed minus plain, x100) and the Wilcoxon test over tasks."""
    plain, _ = converged_scores(backbone, models, seeds, suite, tasks=tasks)
    instructed, _ = converged_scores(backbone, models, seeds, suite, tasks=tasks,
                                     instructions=instructions_key(TANG_YANG))
    columns = ["model", "seed", "tasks", "plain", "instructed", "difference", "p (Wilcoxon)", "verdict"]
    rows = []
    for (model, seed), part in instructed.groupby(["model", "seed"]):
        base = plain[(plain.model == model) & (plain.seed == seed)]
        both = base.merge(part, on=["task", "category"], suffixes=(" plain", " instructed"))
        if both.empty:
            continue
        test = wilcoxon_over_tasks(both["score instructed"], both["score plain"])
        verdict = {SIGNIFICANT + FIRST_BETTER: "instructions help",
                   SIGNIFICANT + SECOND_BETTER: "instructions hurt"}.get(test["verdict"], test["verdict"])
        rows.append({"model": model, "seed": seed, "tasks": len(both), "plain": both["score plain"].mean(),
                     "instructed": both["score instructed"].mean(), "difference": test["mean_difference"],
                     "p (Wilcoxon)": test["p"], "verdict": verdict})
    return pd.DataFrame(rows, columns=columns)


# the earlier fixed-budget runs (the superseded Tables 2-4 page): 150 steps of 16 SNLI triplets, one seed
EARLIER_BUDGET = {"steps": 150, "batch_size": 16, "max_length": 64, "validation_sts_pairs": 500,
                  "validation_triplets": 300, "seed": 0}


def earlier_scores(backbone: str, models: Sequence, suite: str = "compact", tasks: Sequence[str] | None = None,
                   **earlier) -> pd.DataFrame:
    """Stored per-task scores of the earlier fixed-budget runs (TrainConfig fields ``earlier``, e.g. 150 steps of
    SNLI at a linearly decaying lr), as a frame (model, seed 0, task, category, score x100); read only."""
    tasks = list(TASKS) if tasks is None else list(tasks)
    frames = []
    for model in models:
        config = TrainConfig(backbone=backbone, model=model, **earlier)
        found = stored_per_task(SCORES_EXPERIMENT, score_identity(config, EVAL_MAX_LENGTH), suite, tasks)
        if found:
            frames.append(task_frame(found, model=model, seed=config.seed))
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
            rows.append({"model": model, "seed": seed, **run_budget(record)})
    return pd.DataFrame(rows)


def budget_curve(backbone: str, model, seed: int = 0, suite: str = "small",
                 tasks: Sequence[str] | None = None) -> tuple[pd.DataFrame, dict]:
    """Stored scores of a run's budget points (:func:`repro.training.budget_curves.stored_curve`): (model,
    budget_step, examples, task, category, score x100), records keyed (budget_step, task)."""
    config = converged_config(backbone, model, seed)
    record = load_result(RUNS_EXPERIMENT, {"train": config.identity()})
    return stored_curve(SCORES_EXPERIMENT, score_identity(config, EVAL_MAX_LENGTH), None if record is None else record["rows"], suite,
                        list(TASKS) if tasks is None else tasks, model)


def curve_seed(backbone: str, models: Sequence, seeds: Sequence[int], suite: str = "small",
               tasks: Sequence[str] | None = None) -> int | None:
    """The first of ``seeds`` whose runs of every model in ``models`` have budget points stored (a budget curve
    compares the checkpoints of runs with the same seed); None when no seed has them all."""
    for seed in seeds:
        if all(len(budget_curve(backbone, m, seed, suite, tasks)[0]) for m in models):
            return seed
    return None


def missing_runs(backbone: str, models: Sequence, seeds: Sequence[int] = SEEDS, suite: str = "compact",
                 tasks: Sequence[str] | None = None, stored: tuple[pd.DataFrame, dict] | None = None
                 ) -> pd.DataFrame:
    """The (model, seed) runs without every task of ``tasks`` scored: how many tasks are stored, whether the run's
    weights are in this checkout's run folders, and the command that computes the rest. Run folders are not
    committed: a run with some tasks stored whose weights are elsewhere is being scored by another checkout or lost
    its weights with an earlier machine; in the second case its command retrains it with ``RECOMPUTE_STALE=1`` (CPU
    training is not bit-reproducible across machines, so the tasks stored from the old weights are scored again).
    ``stored``: :func:`converged_scores`'s result for the same arguments, if already loaded."""
    tasks = list(TASKS) if tasks is None else list(tasks)
    frame, records = stored if stored is not None else converged_scores(backbone, models, seeds, suite, tasks)
    complete = _complete_runs(frame)
    prefix = ("" if backbone == "smollm2-135m" else f"BACKBONE={backbone} ") + (
        f'TASKS="{" ".join(tasks)}" ' if len(tasks) != len(TASKS) else "")
    rows = []
    for model in models:
        for seed in seeds:
            if (model, seed) in complete:
                continue
            stored_tasks = [records[(model, seed, task)] for task in tasks if (model, seed, task) in records]
            have = len(stored_tasks)
            here = have > 0 and _scored_from_weights_here(converged_config(backbone, model, seed), stored_tasks)
            command = ("RECOMPUTE_STALE=1 " if have and not here else "") + \
                f"{prefix}scripts/p1_converged.sh {model}:{seed}"
            rows.append({"model": model, "seed": seed, "tasks stored": have, "tasks": len(tasks),
                         "weights here": here, "command": command})
    return pd.DataFrame(rows, columns=["model", "seed", "tasks stored", "tasks", "weights here", "command"])


def _scored_from_weights_here(config: TrainConfig, stored: list[dict]) -> bool:
    """Whether this checkout holds the run's weights and the stored tasks were scored from those same weights (a
    run folder retrained since, on this machine or another, holds other weights: its scores are stale)."""
    spec = run_spec(config, progress=False)
    if not spec.weights_here:
        return False
    model, _ = spec.load(spec.folder / "final")  # loads the weights: only for a run folder on this machine
    digest = weights_digest(model)
    return all(record.get("weights_sha256") == digest for record in stored)


def run_commands(missing: pd.DataFrame) -> list[str]:
    """The commands that compute :func:`missing_runs`' runs: the fresh runs share one command, a run with some
    tasks stored from lost weights has its own (``RECOMPUTE_STALE=1``)."""
    fresh = missing[(missing["tasks stored"] == 0) | missing["weights here"]]
    shared = ([f'{fresh["command"].iloc[0].rsplit(" ", 1)[0]} '
               + " ".join(f"{m}:{s}" for m, s in zip(fresh["model"], fresh["seed"]))] if len(fresh) else [])
    return shared + list(missing.loc[(missing["tasks stored"] > 0) & ~missing["weights here"], "command"])


def describe_missing(missing: pd.DataFrame) -> str:
    """One sentence part for a page: the missing runs and their commands (fresh runs share one command)."""
    if missing.empty:
        return ""
    parts = []
    fresh = missing[(missing["tasks stored"] == 0) | missing["weights here"]]
    commands = run_commands(missing)
    if len(fresh):
        parts.append(f"{', '.join(_run_name(row) for row in fresh.to_dict('records'))} (`{commands[0]}`)")
    for row in missing[(missing["tasks stored"] > 0) & ~missing["weights here"]].to_dict("records"):
        parts.append(f"{_run_name(row)}, its weights not in this checkout (scored by another checkout now, or lost "
                     f"with an earlier machine: then `{row['command']}` retrains it)")
    return "; ".join(parts)


def _run_name(row: dict) -> str:
    stored = f", {row['tasks stored']} of {row['tasks']} tasks stored" if row["tasks stored"] else ""
    return f"model {row['model']} seed {row['seed']}{stored}"
