"""One leaderboard across the three papers: every method the book evaluates, on one backbone, one suite (every
task at ``compact`` caps) and one harness, read from the result store only (nothing is computed here).

Each row's per-task scores come from the store its method writes to:

* the untrained last token and mean (no prompt): ``autoreg_untrained``;
* PromptEOL and Echo, raw and with EmbedFilter edge/2: the EmbedFilter sweeps (``embedfilter``);
* Paper 1's five designs under the declared budget rule, averaged over their stored seeds (``trained_scores``);
* Paper 3's compression only, AutoRegEmbed and contrastive baselines (``autoreg_scores``, ``trained_scores``):
  under the budget rule (page ``p3_converged``: the dev-selected configurations, seed-averaged) where stored on
  every task, else at the book's Tables 1-2 configuration;
* all-MiniLM-L6-v2 as an independent reference (``reference_minilm``).

:func:`leaderboard_scores` gathers them (:func:`leaderboard_runs` keeps each training run); :func:`missing_rows`
lists what a full row still lacks and the command that computes it; :func:`ranked` gives category means, the
overall mean and, for each method, the ranks it is significantly above and those it is not separated from (every
pair tested, Holm-corrected, trained methods with their runs as units: :mod:`repro.core.ranking`).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from repro.autoregembed.experiments import converged as p3_converged
from repro.autoregembed.experiments.baselines import CONTRASTIVE, contrastive_config, stored_untrained
from repro.autoregembed.experiments.configs import page_configs
from repro.autoregembed.experiments.scores import SCORES_EXPERIMENT as AUTOREG_SCORES
from repro.autoregembed.experiments.scores import score_identity
from repro.book.pages import page_parameters
from repro.core.ranking import all_pairs, separated_from
from repro.core.scoring import records_frame, stored_per_task
from repro.core.tasks import TASKS
from repro.core.verdicts import same_model
from repro.embedfilter.sweep import stored_scores
from repro.pooling_attention.converged import converged_scores, missing_runs, run_commands
from repro.store.results import all_results
from repro.training.evaluation import SCORES_EXPERIMENT as TRAINED_SCORES
from repro.training.evaluation import score_identity as trained_score_identity

SUITE = "compact"
CATEGORIES = ["STS", "Classification", "Clustering", "PairClassification", "Retrieval"]


def _untrained(backbone: str) -> dict[str, pd.DataFrame]:
    labels = {"last token": "last token (untrained)", "mean": "mean (untrained)"}
    found = stored_untrained(backbone, SUITE)
    return {shown: records_frame(shown, found[label]) for label, shown in labels.items()}


def _embedfilter(backbone: str) -> dict[str, pd.DataFrame]:
    scores = stored_scores(SUITE)
    if scores.empty:
        return {}
    scores = scores[scores.backbone == backbone]
    out = {}
    for prompt, name in (("prompteol", "PromptEOL"), ("echo", "Echo")):
        for variant, suffix in (("raw", ""), ("edge/2", " + EmbedFilter edge/2")):
            part = scores[(scores.prompt == prompt) & (scores.variant == variant)]
            per_task = part.groupby("task")["main_score"].mean() * 100
            out[name + suffix] = pd.DataFrame({"method": name + suffix, "task": per_task.index,
                                               "category": [TASKS[t].category for t in per_task.index],
                                               "score": per_task.values})
    return out


def baseline_label(name: str) -> str:
    """The row label of Paper 3's contrastive baseline ``name`` (a key of ``CONTRASTIVE``)."""
    return f"{name} (Paper 3 baseline)"


def paper1_label(model, seeds: int) -> str:
    return f"Paper 1 model {model} (converged, {seeds} seed{'s' if seeds != 1 else ''})"


def _paper1(backbone: str) -> dict[str, pd.DataFrame]:
    frame, _ = converged_scores(backbone, [1, 2, 3, 4, 5], suite=SUITE)
    stored = set(frame["model"]) if len(frame) else set()
    out = {paper1_label(m, 0): pd.DataFrame(columns=["method", "task", "category", "score"])
           for m in (1, 2, 3, 4, 5) if m not in stored}  # listed as missing
    for model, part in (frame.groupby("model") if len(frame) else []):
        label = paper1_label(model, part["seed"].nunique())
        out[label] = part.assign(method=label)[["method", "seed", "task", "category", "score"]]  # every run
    return out


def paper3_configs(backbone: str = "smollm2-135m"):
    """The stage-1 and stage-2 configurations of the book's Paper 3 Tables 1-2 page, on ``backbone``."""
    params = page_parameters("p3_tables", "standard") | {"backbone": backbone}
    return page_configs(**(params | {"recompute": False}))


BUDGET_RULE = " under the budget rule"  # appended to a Paper 3 label (so the encode-rate prefixes still match)
SAME_AS_STAGE1 = ("; = AutoRegEmbed under the budget rule: dev rejected stage 2 in every run, so the two are one "
                  "model")


def _seeds(n: int) -> str:
    return f"{n} seed{'s' if n != 1 else ''}"


def paper3_budget_labels(backbone: str = "smollm2-135m", seeds: dict[str, int] | None = None) -> dict[str, str]:
    """Row labels of Paper 3's methods under the budget rule (page ``p3_converged``), by that page's method name
    (AutoRegEmbed, the best contrastive baseline, compression only); ``seeds``: seeds stored per method."""
    seeds = seeds or {}
    base = p3_converged.base_config(backbone)
    selected = p3_converged.selected_configs(base)
    autoreg = selected[p3_converged.AUTOREG]
    start = p3_converged.start_selected_seeds(base) if autoreg is not None else []
    # a LoRA selection is named apart, so that the encode rate timed for the Tables 1-2 (full fine-tuning) encoder
    # is not read for it (repro.crosspaper.encode_rates matches a row by the start of its label)
    lora = ", LoRA" if autoreg is not None and autoreg.finetune != "full" else ""
    labels = {p3_converged.COMPRESSION: f"compression only{lora} (Paper 3){BUDGET_RULE} (the stage 1 of its seeds)"}
    if autoreg is not None:
        labels[p3_converged.AUTOREG] = (f"AutoRegEmbed{lora} (Paper 3){BUDGET_RULE}, lr {autoreg.lr:g}, "
                                        f"{autoreg.divergence}, {_seeds(seeds.get(p3_converged.AUTOREG, 0))}"
                                        + (f" (dev selects step 0, the stage-1 encoder, at {_seeds(len(start))})"
                                           if start else ""))
    baseline = selected[p3_converged.BASELINE]
    if baseline is not None:
        name = next(n for n, (m, hard) in CONTRASTIVE.items()
                    if m == baseline.model and hard == baseline.hard_negatives)
        labels[p3_converged.BASELINE] = (f"{baseline_label(name)}{BUDGET_RULE}, lr {baseline.lr:g}, "
                                         f"tau {baseline.temperature:g}, "
                                         f"{_seeds(seeds.get(p3_converged.BASELINE, 0))}")
    return labels


def paper3_budget_frame(backbone: str) -> tuple[pd.DataFrame, dict[str, str]]:
    """The budget-rule page's stored scores on every task of the suite (model, seed, task, category, score) and
    each method's row label (seeds counted over those scores)."""
    frame, _ = p3_converged.final_scores(p3_converged.base_config(backbone), p3_converged.SEEDS, SUITE, list(TASKS))
    if frame.empty:
        return frame, {}
    return frame, paper3_budget_labels(backbone, frame.groupby("model")["seed"].nunique().to_dict())


def _paper3_budget_rule(backbone: str) -> dict[str, pd.DataFrame]:
    """Paper 3's methods under the budget rule: each dev-selected configuration averaged over its seeds stored on
    every task, and compression only from the stage 1 those seeds started from (empty while none is stored)."""
    frame, labels = paper3_budget_frame(backbone)
    out = {}
    merged = frame.empty is False and same_model(frame, p3_converged.AUTOREG, p3_converged.COMPRESSION)
    for model, part in frame.groupby("model"):
        if merged and model == p3_converged.AUTOREG:
            continue  # dev rejected stage 2 in every run: one model, one row (compression only's, with that note)
        label = labels[model] + (SAME_AS_STAGE1 if merged and model == p3_converged.COMPRESSION else "")
        out[label] = part.assign(method=label)[["method", "seed", "task", "category", "score"]]
    return out


def tables_labels(backbone: str = "smollm2-135m") -> dict[str, str]:
    """Row labels of compression only and AutoRegEmbed at the Tables 1-2 page's configuration (fixed budget, one
    seed), by method; they start like the budget-rule labels, so the encode rates match both."""
    compress, align = paper3_configs(backbone)
    return {"compression only": f"compression only (Paper 3) at the Tables 1-2 configuration ({compress.steps} "
                                f"stage-1 steps, seed {compress.seed})",
            "AutoRegEmbed": f"AutoRegEmbed (Paper 3) at the Tables 1-2 configuration ({align.steps} stage-2 steps at "
                            f"lr {align.lr:g}, seed {align.seed})"}


def _paper3(backbone: str) -> dict[str, pd.DataFrame]:
    """Paper 3's rows: under the budget rule where stored on every task (AutoRegEmbed with its compression only;
    the dev-selected contrastive baseline), else at the Tables 1-2 configuration (its four baselines)."""
    later = _paper3_budget_rule(backbone)
    if later:
        earlier, fixed = _paper3_tables(backbone), tables_labels(backbone)
        drop = {fixed[method] for method in fixed if any(label.startswith(method) for label in later)}
        if any("baseline" in label for label in later):
            drop |= {baseline_label(name) for name in CONTRASTIVE}
        return {**{k: v for k, v in earlier.items() if k not in drop}, **later}
    return _paper3_tables(backbone)


def _paper3_tables(backbone: str) -> dict[str, pd.DataFrame]:
    compress, align = paper3_configs(backbone)
    tasks = list(TASKS)
    out = {}
    fixed = tables_labels(backbone)
    for label, config in ((fixed["compression only"], compress), (fixed["AutoRegEmbed"], align)):
        out[label] = records_frame(label, stored_per_task(AUTOREG_SCORES, score_identity(config), SUITE, tasks)
                                   ).assign(seed=config.seed)  # one training run
    for name in CONTRASTIVE:
        config = contrastive_config(name, align)
        label = baseline_label(name)
        out[label] = records_frame(label, stored_per_task(TRAINED_SCORES, trained_score_identity(config), SUITE, tasks)
                                   ).assign(seed=config.seed)
    return out


def _minilm() -> dict[str, pd.DataFrame]:
    label = "all-MiniLM-L6-v2 (reference)"
    for record in all_results("reference_minilm"):
        if record["params"]["suite"] == SUITE:
            rows = pd.DataFrame(record["rows"])
            per_task = rows.groupby("task")["main_score"].mean() * 100
            return {label: pd.DataFrame({"method": label, "task": per_task.index,
                                         "category": [TASKS[t].category for t in per_task.index],
                                         "score": per_task.values})}
    return {label: pd.DataFrame(columns=["method", "task", "category", "score"])}


ROWS = {  # label part -> (paper, the command that computes a missing task); the first part found wins
    BUDGET_RULE: ("3", "scripts/p3_converged.sh (in the session that trains the run)"),
    "last token (untrained)": ("-", "python -m repro.autoregembed.experiments.cli --untrained --suite compact "
                                    "--tasks ..."),
    "mean (untrained)": ("-", "python -m repro.autoregembed.experiments.cli --untrained --suite compact --tasks ..."),
    "PromptEOL": ("2", "repro embedfilter --prompt prompteol --suite compact"),
    "Echo": ("2", "repro embedfilter --prompt echo --suite compact"),
    "Paper 1 model": ("1", None),  # its runs not complete: missing_rows asks missing_runs
    "compression only": ("3", "python -m repro.autoregembed.experiments.cli --stage compress --suite compact"),
    "AutoRegEmbed": ("3", "python -m repro.autoregembed.experiments.cli --stage align --suite compact"),
    "baseline": ("3", "retrain the baseline (p3_tables standard) and score it on compact"),
    "all-MiniLM": ("reference", "python -m repro.core.reference --suite compact"),
}


def leaderboard_scores(backbone: str = "smollm2-135m") -> tuple[pd.DataFrame, list[str]]:
    """Every method's stored per-task scores (x100) on ``backbone`` at compact caps (method, task, category,
    score; a method with nothing stored has no rows), and every method's label in leaderboard order."""
    runs, methods = leaderboard_runs(backbone)
    if runs.empty:
        return pd.DataFrame(columns=["method", "task", "category", "score"]), methods
    scores = runs.groupby(["method", "task", "category"], as_index=False, sort=False)["score"].mean()
    return scores, methods


def leaderboard_runs(backbone: str = "smollm2-135m") -> tuple[pd.DataFrame, list[str]]:
    """:func:`leaderboard_scores` before the seed average: one row per (method, seed, task); ``seed`` NaN for a
    deterministic method (training-free, or the reference), a trained method's own seeds otherwise."""
    frames = {**_untrained(backbone), **_embedfilter(backbone), **_paper1(backbone), **_paper3(backbone),
              **_minilm()}
    stored = [f if "seed" in f else f.assign(seed=np.nan) for f in frames.values() if len(f)]
    columns = ["method", "seed", "task", "category", "score"]
    runs = pd.concat([f[columns] for f in stored], ignore_index=True) if stored else pd.DataFrame(columns=columns)
    return runs, list(frames)


def missing_rows(scores: pd.DataFrame, methods: list[str], run_hours: float | None = None,
                 backbone: str = "smollm2-135m") -> pd.DataFrame:
    """Per method: the tasks of the suite it lacks, and the command that computes them (a Paper 1 row: the
    commands of its runs not complete on ``backbone``, :func:`~repro.pooling_attention.converged.missing_runs`).
    ``run_hours``: the measured wall hours of one Paper 1 converged run with its scoring
    (:func:`repro.crosspaper.leaderboard_costs.paper1_run_hours`); a Paper 1 row then gets its estimated cost, that
    times the runs its commands train."""
    rows = []
    for method in methods:
        have = set(scores.loc[scores.method == method, "task"])
        lacking = [t for t in TASKS if t not in have]
        if lacking:
            command = next((c for prefix, (_, c) in ROWS.items() if prefix in method), "")
            model = re.match(r"Paper 1 model (\d)", method)
            runs = missing_runs(backbone, [int(model.group(1))], suite=SUITE) if model else None
            command = "; ".join(run_commands(runs)) if model else command
            row = {"method": method, "tasks stored": len(have), "missing": len(lacking),
                   "missing tasks": ", ".join(lacking), "computed by": command}
            if run_hours is not None:
                row["estimated hours"] = round(len(runs) * run_hours, 1) if model and len(runs) else np.nan
            rows.append(row)
    columns = ["method", "tasks stored", "missing", "missing tasks", "computed by"]
    return pd.DataFrame(rows, columns=columns + (["estimated hours"] if run_hours is not None else []))


def ranked(scores: pd.DataFrame, complete_only: bool = True, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Category means and the overall mean over tasks (seed-averaged ``scores``), in rank order, and for each
    method the ranks it is significantly above and those it is not separated from: every pair tested
    (:func:`repro.core.ranking.all_pairs`: runs as units for trained methods, tasks for deterministic ones) with
    Holm's correction over all pairs. ``runs``: the per-seed rows (:func:`leaderboard_runs`; default: every
    method deterministic). ``complete_only``: rank only methods with every task of the suite."""
    columns = ["tasks", "mean", *CATEGORIES, "rank", "above (Holm)", "not separated from"]
    if scores.empty:
        return pd.DataFrame(columns=columns)
    wide = scores.pivot_table(index="task", columns="method", values="score")
    counts = wide.notna().sum()
    if complete_only:
        wide = wide.loc[:, counts[counts == len(TASKS)].index]
    categories = scores.drop_duplicates("task").set_index("task")["category"]
    table = pd.DataFrame({"tasks": wide.notna().sum(), "mean": wide.mean()})
    for category in CATEGORIES:
        tasks = [t for t in wide.index if categories.get(t) == category]
        table[category] = wide.loc[tasks].mean() if tasks else np.nan
    table = table.sort_values("mean", ascending=False)
    runs = scores.assign(seed=np.nan) if runs is None else runs
    pairs = all_pairs(runs[runs["method"].isin(table.index)], list(table.index))
    if pairs.empty:
        return table.assign(rank=range(1, len(table) + 1), **{"above (Holm)": "-", "not separated from": "-"})
    return table.join(separated_from(pairs, list(table.index)))


SHORT = {"Classification": "Class.", "Clustering": "Clust.", "PairClassification": "PairClass.",
         "Retrieval": "Retr.", "training hours": "train h", "dimensions": "dims", "encode tok/s": "tok/s"}


def compact_view(table: pd.DataFrame) -> pd.DataFrame:
    """A :func:`ranked` table narrow enough for the page's column: indexed by rank with the method as a column,
    short category headers, whole numbers where they are whole."""
    view = table.copy()
    for column in ("dimensions", "encode tok/s"):  # whole numbers
        if column in view:
            view[column] = pd.to_numeric(view[column], errors="coerce").round().astype("Int64")
    if "rank" in view:
        view = view.rename_axis("method").reset_index().set_index("rank")
    return view.rename(columns=SHORT)


def shown(table: pd.DataFrame, decimals: int = 2) -> pd.DataFrame:
    """``table`` rounded for the page, a missing value shown as "–" instead of NaN (a category without tasks, the
    reference's training hours)."""
    rounded = table.round(decimals)
    return rounded.astype(object).where(rounded.notna(), "–")


def short_label(label: str) -> str:
    """A few words naming a row in the cost figure (the table gives the full label)."""
    model = re.match(r"Paper 1 model (\d)", label)
    if model:
        return f"P1 model {model.group(1)}"
    for part, short in (("(Paper 3 baseline)", "P3 baseline"), ("compression only", "compression only"),
                        ("AutoRegEmbed", "AutoRegEmbed"), ("all-MiniLM", "MiniLM (reference)")):
        if part in label:
            return short
    return label.replace(" + EmbedFilter edge/2", " + EF").replace(" (untrained)", "")
