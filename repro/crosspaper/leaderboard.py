"""One leaderboard across the three papers: every method the book evaluates, on one backbone, one suite (every
task at ``compact`` caps) and one harness, read from the result store only (nothing is computed here).

Each row's per-task scores come from the store its method writes to:

* the untrained last token and mean (no prompt): ``autoreg_untrained``;
* PromptEOL and Echo, raw and with EmbedFilter edge/2: the EmbedFilter sweeps (``embedfilter``);
* Paper 1's five designs under the declared budget rule, averaged over their stored seeds (``trained_scores``);
* Paper 3's compression only, AutoRegEmbed and contrastive baselines (``autoreg_scores``, ``trained_scores``):
  the newest runs stored on every task (:mod:`repro.crosspaper.leaderboard_paper3`: the independent chains, the
  budget-rule page's dev-selected configurations, else the book's Tables 1-2 configuration);
* all-MiniLM-L6-v2 as an independent reference (``reference_minilm``).

:func:`leaderboard_scores` gathers them (:func:`leaderboard_runs` keeps each training run); :func:`missing_rows`
lists what a full row still lacks and the command that computes it; :func:`ranked` gives category means, the
overall mean and, for each method, the ranks it is significantly above and those it is not separated from (every
pair tested, Holm-corrected, trained methods with their runs as units: :mod:`repro.verdicts.ranking`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from repro.autoregembed.experiments.baselines import stored_untrained
from repro.core.scoring import records_frame
from repro.core.tasks import TASKS
from repro.crosspaper.registry import REGISTRY, papers
from repro.embedfilter.sweep import stored_scores
from repro.pages.parameters import page_parameters
from repro.pooling_attention.converged import converged_scores, missing_runs, run_commands
from repro.recipes.recipes import sweep_command
from repro.store.results import all_results
from repro.verdicts.ranking import all_pairs, separated_from

SUITE = "compact"
CATEGORIES = ["STS", "Classification", "Clustering", "PairClassification", "Retrieval"]
UNTRAINED = "python -m repro.autoregembed.experiments.cli --untrained --suite compact --tasks ..."


@dataclass(frozen=True)
class Row:
    """A leaderboard row's description; the row's id (its key everywhere: scores, hours, dimensions, encode rates)
    is separate from what the page shows."""

    label: str  # the page's row label (may name its configuration and seed count)
    short: str  # a few words for the cost figure
    paper: str  # "1", "2", "3", "-" (no paper's method) or "reference"
    command: str = ""  # what computes a missing task (Paper 1: its missing runs, asked when needed)
    rate: str | None = None  # the encode-rate key that times it (repro.crosspaper.encode_rates); None: not timed
    training_free: bool = False


EMPTY = ["method", "task", "category", "score"]


def _task_frame(key: str, per_task: pd.Series) -> pd.DataFrame:
    """A row's per-task scores (x100, indexed by task) as the leaderboard's frame."""
    return pd.DataFrame({"method": key, "task": per_task.index,
                         "category": [TASKS[t].category for t in per_task.index], "score": per_task.values})


def _untrained(backbone: str) -> dict[str, tuple[Row, pd.DataFrame]]:
    found = stored_untrained(backbone, SUITE)
    out = {}
    for key, name in (("last", "last token"), ("mean", "mean")):
        row = Row(f"{name} (untrained)", name, "-", UNTRAINED, key, True)
        out[key] = row, records_frame(key, found[name])
    return out


def paper2_tokenization() -> str:
    """The tokenization of Paper 2's current pages (the standard main table's), which the leaderboard's Paper 2
    rows share so that one method has one score across the book."""
    return page_parameters("p2_main_table", "standard")["tokenization"]


def paper2_leaderboard(backbone: str) -> dict[str, tuple[Row, pd.DataFrame]]:
    scores = stored_scores(SUITE, tokenization=paper2_tokenization())
    if scores.empty:
        return {}
    scores = scores[scores.backbone == backbone]
    out = {}
    for prompt, name in (("prompteol", "PromptEOL"), ("echo", "Echo")):
        for variant, suffix in (("raw", ""), ("edge/2", "+edge/2")):
            key = prompt + suffix
            label = name + (" + EmbedFilter edge/2" if suffix else "")
            part = scores[(scores.prompt == prompt) & (scores.variant == variant)]
            per_task = part.groupby("task")["main_score"].mean() * 100
            row = Row(label, name + (" + EF" if suffix else ""), "2",
                      sweep_command(f"{backbone}/{prompt}", SUITE, paper2_tokenization()),
                      key, True)
            out[key] = row, _task_frame(key, per_task)
    return out


def paper1_label(model, seeds: int) -> str:
    return f"Paper 1 model {model} (converged, {seeds} seed{'s' if seeds != 1 else ''})"


def paper1_id(model) -> str:
    """The row id of Paper 1's model ``model`` (also its encode-rate key)."""
    return f"p1-model{model}"


def paper1_leaderboard(backbone: str) -> dict[str, tuple[Row, pd.DataFrame]]:
    frame, _ = converged_scores(backbone, [1, 2, 3, 4, 5], suite=SUITE)
    out = {}
    for model in (1, 2, 3, 4, 5):
        part = frame[frame["model"] == model] if len(frame) else frame
        key = paper1_id(model)
        row = Row(paper1_label(model, part["seed"].nunique() if len(part) else 0), f"P1 model {model}", "1",
                  rate=key)
        # every run (listed as missing while none is stored)
        out[key] = row, (part.assign(method=key)[["method", "seed", "task", "category", "score"]] if len(part)
                         else pd.DataFrame(columns=EMPTY))
    return out


def _minilm() -> dict[str, tuple[Row, pd.DataFrame]]:
    row = Row("all-MiniLM-L6-v2 (reference)", "MiniLM (reference)", "reference",
              "python -m repro.core.reference --suite compact", "minilm")
    for record in all_results("reference_minilm"):
        if record["params"]["suite"] == SUITE:
            rows = pd.DataFrame(record["rows"])
            per_task = rows.groupby("task")["main_score"].mean() * 100
            return {"minilm": (row, _task_frame("minilm", per_task))}
    return {"minilm": (row, pd.DataFrame(columns=EMPTY))}


def leaderboard_scores(backbone: str = "smollm2-135m") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every method's stored per-task scores (x100) on ``backbone`` at compact caps (method = the row id, task,
    category, score; a method with nothing stored has no rows), and the rows (:func:`leaderboard_runs`)."""
    runs, rows = leaderboard_runs(backbone)
    if runs.empty:
        return pd.DataFrame(columns=EMPTY), rows
    scores = runs.groupby(["method", "task", "category"], as_index=False, sort=False)["score"].mean()
    return scores, rows


def leaderboard_runs(backbone: str = "smollm2-135m") -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`leaderboard_scores` before the seed average: one row per (method, seed, task); ``seed`` NaN for a
    deterministic method (training-free, or the reference), a trained method's own seeds otherwise. The rows: one
    per method in leaderboard order, indexed by its id, with the :class:`Row` fields (label, short, paper, command,
    rate, training_free)."""
    # the untrained references, each registered paper's rows (training-free first, as the leaderboard lists them),
    # the reference model
    papers_rows = {paper.number: paper.leaderboard_rows(backbone) for paper in papers() if paper.leaderboard}
    order = sorted(papers_rows, key=lambda n: (not REGISTRY[n].training_free, n))
    built = {**_untrained(backbone), **{k: v for n in order for k, v in papers_rows[n].items()}, **_minilm()}
    stored = [f if "seed" in f else f.assign(seed=np.nan) for _, f in built.values() if len(f)]
    columns = ["method", "seed", "task", "category", "score"]
    runs = pd.concat([f[columns] for f in stored], ignore_index=True) if stored else pd.DataFrame(columns=columns)
    return runs, row_table({key: row for key, (row, _) in built.items()})


def row_table(rows) -> pd.DataFrame:
    """The rows ``{id: Row}`` as a frame indexed by id; bare ids (a list: methods the leaderboard does not build)
    are labelled by their id, with no command."""
    rows = rows if isinstance(rows, dict) else {key: Row(key, key, "-") for key in rows}
    return pd.DataFrame([asdict(row) for row in rows.values()], index=pd.Index(list(rows), name="id"),
                        columns=list(Row.__dataclass_fields__))


def missing_rows(scores: pd.DataFrame, rows: pd.DataFrame, run_hours: float | None = None,
                 backbone: str = "smollm2-135m") -> pd.DataFrame:
    """Per row of ``rows`` (:func:`leaderboard_runs`; or a list of ids): the tasks of the suite it lacks, and the
    command that computes them (a Paper 1 row: the commands of its runs not complete on ``backbone``,
    :func:`~repro.pooling_attention.converged.missing_runs`). ``run_hours``: the measured wall hours of one Paper 1
    converged run with its scoring (:func:`repro.crosspaper.leaderboard_costs.paper1_run_hours`); a Paper 1 row then
    gets its estimated cost, that times the runs its commands train. ``method`` is the row's label."""
    rows = rows if isinstance(rows, pd.DataFrame) else row_table(rows)
    out = []
    for key, row in rows.iterrows():
        have = set(scores.loc[scores.method == key, "task"])
        lacking = [t for t in TASKS if t not in have]
        if lacking:
            model = int(key.removeprefix("p1-model")) if row["paper"] == "1" else None
            runs = missing_runs(backbone, [model], suite=SUITE) if model else None
            command = "; ".join(run_commands(runs)) if model else row["command"]
            line = {"method": row["label"], "tasks stored": len(have), "missing": len(lacking),
                    "missing tasks": ", ".join(lacking), "computed by": command}
            if run_hours is not None:
                line["estimated hours"] = round(len(runs) * run_hours, 1) if model and len(runs) else np.nan
            out.append(line)
    columns = ["method", "tasks stored", "missing", "missing tasks", "computed by"]
    return pd.DataFrame(out, columns=columns + (["estimated hours"] if run_hours is not None else []))


def ranked(scores: pd.DataFrame, complete_only: bool = True, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Category means and the overall mean over tasks (seed-averaged ``scores``), in rank order, and for each
    method the ranks it is significantly above and those it is not separated from: every pair tested
    (:func:`repro.verdicts.ranking.all_pairs`: runs as units for trained methods, tasks for deterministic ones) with
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


def compact_view(table: pd.DataFrame, rows: pd.DataFrame | None = None) -> pd.DataFrame:
    """A :func:`ranked` table narrow enough for the page's column: indexed by rank with the method (its label in
    ``rows``; default: its id) as a column, short category headers, whole numbers where they are whole, and no
    "tasks" column where every row has the same count (its section states it)."""
    view = table.copy()
    for column in ("dimensions", "encode tok/s"):  # whole numbers
        if column in view:
            view[column] = pd.to_numeric(view[column], errors="coerce").round().astype("Int64")
    if rows is not None:
        view.index = [rows["label"].get(key, key) for key in view.index]
    if "rank" in view:
        view = view.rename_axis("method").reset_index().set_index("rank")
    if "tasks" in view and view["tasks"].nunique() == 1 and len(view) > 1:  # the section says how many: no column
        view = view.drop(columns="tasks")
    return view.rename(columns=SHORT)


def shown(table: pd.DataFrame, decimals: int = 2) -> pd.DataFrame:
    """``table`` rounded for the page, a missing value shown as "–" instead of NaN (a category without tasks, the
    reference's training hours)."""
    rounded = table.round(decimals)
    return rounded.astype(object).where(rounded.notna(), "–")
