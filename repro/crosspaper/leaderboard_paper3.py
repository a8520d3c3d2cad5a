"""Paper 3's leaderboard rows and their training hours, read from the result store only.

Three generations of AutoRegEmbed runs, the newest that is stored on every task of the leaderboard shown:

* the **independent chains** (:mod:`repro.autoregembed.experiments.independent`: one stage 1 per seed under the
  budget rule and the principled template, each seed's stage 2 from its own stage 1): compression only and
  AutoRegEmbed, averaged over the seeds scored on every task (:func:`paper3_chains`);
* the **budget-rule page** (``p3_converged``): its dev-selected AutoRegEmbed, whose seeds share one stage 1, and the
  dev-selected contrastive baseline (the baseline stays: its seeds are independent runs);
* the **Tables 1-2 configuration** (fixed budget, one seed) and its four contrastive baselines.

:func:`paper3_leaderboard` is what the registry names; :func:`paper3_hours` the wall-clock hours behind each row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import pandas as pd

from repro.autoregembed.experiments import converged as p3_converged
from repro.autoregembed.experiments import independent as p3_independent
from repro.autoregembed.experiments import search as p3_search
from repro.autoregembed.experiments.baselines import CONTRASTIVE, contrastive_config
from repro.autoregembed.experiments.cli import command_for
from repro.autoregembed.experiments.configs import page_configs
from repro.autoregembed.experiments.scores import SCORES_EXPERIMENT as AUTOREG_SCORES
from repro.autoregembed.experiments.scores import score_identity
from repro.autoregembed.train import RUNS_EXPERIMENT as AUTOREG_RUNS
from repro.autoregembed.train import run_params as ar_run_params
from repro.core.scoring import records_frame, stored_per_task
from repro.core.tasks import TASKS
from repro.crosspaper.leaderboard import SUITE, Row
from repro.pages.parameters import page_parameters
from repro.store.results import load_result
from repro.training.contrastive import RUNS_EXPERIMENT as TRAINED_RUNS
from repro.training.evaluation import SCORES_EXPERIMENT as TRAINED_SCORES
from repro.training.evaluation import score_identity as trained_score_identity
from repro.verdicts.run_units import same_model

BUDGET_COMMAND = "scripts/p3_converged.sh (in the session that trains the run)"
CHAIN_COMMAND = ("python -m repro.autoregembed.experiments.independent --seeds S (stage 1, stage 2 and every task, "
                 "in one session)")


def baseline_label(name: str) -> str:
    """The row label of Paper 3's contrastive baseline ``name`` (a key of ``CONTRASTIVE``)."""
    return f"{name} (Paper 3 baseline)"


def paper3_configs(backbone: str = "smollm2-135m"):
    """The stage-1 and stage-2 configurations of the book's Paper 3 Tables 1-2 page, on ``backbone``."""
    params = page_parameters("p3_tables", "standard") | {"backbone": backbone}
    return page_configs(**(params | {"recompute": False}))


BUDGET_RULE = " under the budget rule"  # appended to a Paper 3 label
# the budget-rule page's AutoRegEmbed seeds all start from one stage 1: on the ledger the independent chains (one stage
# 1 per seed) supersede them; here too, once a chain is scored on every task a leaderboard row needs
SHARED_STAGE1 = ("the one stage 1 its seeds share, so one independent run; superseded on the ledger by the "
                 "independent chains, scored on STS and retrieval only")
SAME_AS_STAGE1 = ("; = AutoRegEmbed under the budget rule: dev rejected stage 2 in every run, so the two are one "
                  "model")
# the row ids of Paper 3's methods under the budget rule (page p3_converged), by that page's method name
BUDGET_IDS = {p3_converged.COMPRESSION: "p3-compress@budget", p3_converged.AUTOREG: "p3-align@budget",
              p3_converged.BASELINE: "p3-baseline@budget"}


def _seeds(n: int) -> str:
    return f"{n} seed{'s' if n != 1 else ''}"


def paper3_budget_rows(backbone: str = "smollm2-135m", seeds: dict[str, int] | None = None,
                       sides: Sequence[str] = p3_search.SIDES) -> dict[str, Row]:
    """Rows of Paper 3's methods under the budget rule (page ``p3_converged``), by that page's method name
    (AutoRegEmbed, the best contrastive baseline, compression only); ``seeds``: seeds stored per method; ``sides``:
    the searches read (the baseline's alone where the independent chains supersede AutoRegEmbed)."""
    seeds = seeds or {}
    base = p3_converged.base_config(backbone)
    selected = (p3_converged.selected_configs(base) if set(sides) == set(p3_search.SIDES) else
                {p3_converged.LABELS[side]: c for side, c in p3_search.selected_sides(base, sides, p3_converged.selected_config).items()})
    autoreg = selected.get(p3_converged.AUTOREG)
    start = p3_converged.start_selected_seeds(base) if autoreg is not None else []
    # a LoRA selection is named apart, and no encode rate is read for it: the rate timed is the Tables 1-2 (full
    # fine-tuning) encoder's
    lora = autoreg is not None and autoreg.finetune != "full"
    named = ", LoRA" if lora else ""
    rows = {p3_converged.COMPRESSION: Row(
        f"compression only{named} (Paper 3){BUDGET_RULE} ({SHARED_STAGE1})", "compression only", "3",
        BUDGET_COMMAND, None if lora else "p3-compress")} if p3_converged.AUTOREG in selected else {}
    if autoreg is not None:
        rows[p3_converged.AUTOREG] = Row(
            f"AutoRegEmbed{named} (Paper 3){BUDGET_RULE}, lr {autoreg.lr:g}, {autoreg.divergence}, "
            f"{_seeds(seeds.get(p3_converged.AUTOREG, 0))}"
            + (f" (dev selects step 0, the stage-1 encoder, at {_seeds(len(start))})" if start else ""),
            "AutoRegEmbed", "3", BUDGET_COMMAND, None if lora else "p3-align")
    baseline = selected.get(p3_converged.BASELINE)
    if baseline is not None:
        name = next(n for n, (m, hard) in CONTRASTIVE.items()
                    if m == baseline.model and hard == baseline.hard_negatives)
        rows[p3_converged.BASELINE] = Row(
            f"{baseline_label(name)}{BUDGET_RULE}, lr {baseline.lr:g}, tau {baseline.temperature:g}, "
            f"{_seeds(seeds.get(p3_converged.BASELINE, 0))}", "P3 baseline", "3", BUDGET_COMMAND, f"p3-{name}")
    return rows


def paper3_budget_frame(backbone: str, sides: Sequence[str] = p3_search.SIDES
                        ) -> tuple[pd.DataFrame, dict[str, Row]]:
    """The budget-rule page's stored scores on every task of the suite (model, seed, task, category, score) and
    each method's row (seeds counted over those scores), of ``sides``' searches only."""
    frame, _ = p3_converged.final_scores(p3_converged.base_config(backbone), p3_converged.SEEDS, SUITE, list(TASKS),
                                         sides=sides)
    if frame.empty:
        return frame, {}
    return frame, paper3_budget_rows(backbone, frame.groupby("model")["seed"].nunique().to_dict(), sides)


def _paper3_budget_rule(backbone: str, sides: Sequence[str] = p3_search.SIDES) -> dict[str, tuple[Row, pd.DataFrame]]:
    """Paper 3's methods under the budget rule: each dev-selected configuration averaged over its seeds stored on
    every task, and compression only from the stage 1 those seeds started from (empty while none is stored);
    ``sides``: the searches read."""
    frame, rows = paper3_budget_frame(backbone, sides)
    out = {}
    merged = frame.empty is False and same_model(frame, p3_converged.AUTOREG, p3_converged.COMPRESSION)
    for model, part in frame.groupby("model"):
        if merged and model == p3_converged.AUTOREG:
            continue  # dev rejected stage 2 in every run: one model, one row (compression only's, with that note)
        row = rows[model]
        if merged and model == p3_converged.COMPRESSION:
            row = Row(**(asdict(row) | {"label": row.label + SAME_AS_STAGE1}))
        key = BUDGET_IDS[model]
        out[key] = row, part.assign(method=key)[["method", "seed", "task", "category", "score"]]
    return out


def tables_labels(backbone: str = "smollm2-135m") -> dict[str, str]:
    """Row labels of compression only and AutoRegEmbed at the Tables 1-2 page's configuration (fixed budget, one
    seed), by row id."""
    compress, align = paper3_configs(backbone)
    return {"p3-compress": f"compression only (Paper 3) at the Tables 1-2 configuration ({compress.steps} "
                           f"stage-1 steps, seed {compress.seed})",
            "p3-align": f"AutoRegEmbed (Paper 3) at the Tables 1-2 configuration ({align.steps} stage-2 steps at "
                        f"lr {align.lr:g}, seed {align.seed})"}


def baseline_id(name: str) -> str:
    """The row id of Paper 3's contrastive baseline ``name`` at the Tables 1-2 configuration (its encode-rate key)."""
    return f"p3-{name}"


def paper3_leaderboard(backbone: str) -> dict[str, tuple[Row, pd.DataFrame]]:
    """Paper 3's rows: the independent chains where one is stored on every task (compression only and AutoRegEmbed);
    under the budget rule where stored on every task (AutoRegEmbed with its compression only, unless the chains
    supersede them; the dev-selected contrastive baseline); else at the Tables 1-2 configuration (its four
    baselines)."""
    chains = paper3_chains(backbone)
    # the independent chains supersede every earlier AutoRegEmbed and compression only: those are then never read
    later = _paper3_budget_rule(backbone, ["baseline"] if chains else p3_search.SIDES)
    if chains:
        later = {k: v for k, v in later.items() if k not in ("p3-compress@budget", "p3-align@budget")}
    if later or chains:
        drop = {key for key in ("p3-compress", "p3-align") if f"{key}@budget" in later}
        if "p3-compress@budget" in later or chains:  # AutoRegEmbed is then that row (or merged into it), never
            drop |= {"p3-compress", "p3-align"}  # the superseded Tables 1-2 run
        if "p3-baseline@budget" in later:
            drop |= {baseline_id(name) for name in CONTRASTIVE}
        kept = {"p3-compress", "p3-align", *(baseline_id(name) for name in CONTRASTIVE)} - drop
        earlier = _paper3_tables(backbone, kept) if kept else {}  # a superseded row is not even read
        return {**earlier, **later, **chains}
    return _paper3_tables(backbone)


# the row ids of the independent chains' methods, by the budget-rule page's method name
CHAIN_IDS = {p3_converged.COMPRESSION: "p3-compress@chains", p3_converged.AUTOREG: "p3-align@chains"}
CHAINS = "independent chains (one stage 1 per seed, under the budget rule and the principled template)"


def chain_frame(backbone: str) -> pd.DataFrame:
    """The independent chains' compression only and AutoRegEmbed on every task of the leaderboard (model, seed, unit,
    task, category, score), seeds with a task missing left out."""
    frame, _ = p3_independent.final_scores(p3_independent.SEEDS, backbone, SUITE, list(TASKS))
    return frame[frame["model"].isin(list(CHAIN_IDS))]


def stage2_adopted(frame: pd.DataFrame) -> bool:
    """Does any chain's AutoRegEmbed differ from its own compression only (its stage 2 adopted by dev)?"""
    return any(not same_model(part, p3_converged.AUTOREG, p3_converged.COMPRESSION)
               for _, part in frame.groupby("seed"))


def paper3_chains(backbone: str) -> dict[str, tuple[Row, pd.DataFrame]]:
    """The independent chains' rows, averaged over the seeds scored on every task (empty while none is): AutoRegEmbed
    and compression only, one row where no chain's stage 2 was adopted (the two are then one model per seed). The
    label counts those seeds and names the seeds scored on the page's tasks only."""
    frame = chain_frame(backbone)
    if frame.empty:
        return {}
    seeds = sorted(int(s) for s in frame["seed"].unique())
    page_only, _ = p3_independent.final_scores(p3_independent.SEEDS, backbone, SUITE, p3_converged.TASKS)
    partial = sorted(set(int(s) for s in page_only["seed"][page_only["model"] == p3_converged.COMPRESSION])
                     - set(seeds))
    counted = (f"{_seeds(len(seeds))} ({', '.join(map(str, seeds))})"
               + (f"; seed{'s' if len(partial) > 1 else ''} {', '.join(map(str, partial))} scored on STS and "
                  "retrieval only (weights gone)" if partial else ""))
    adopted = stage2_adopted(frame)
    out = {}
    for model, short, rate in ((p3_converged.COMPRESSION, "compression only", "p3-compress"),
                               (p3_converged.AUTOREG, "AutoRegEmbed", "p3-align")):
        if model == p3_converged.AUTOREG and not adopted:
            continue  # one model: the compression-only row says so
        name = "AutoRegEmbed" if model == p3_converged.AUTOREG else "compression only"
        note = "" if adopted else "; = AutoRegEmbed: dev rejected stage 2 in every chain, so the two are one model"
        key = CHAIN_IDS[model]
        row = Row(f"{name} (Paper 3), {CHAINS}, {counted}{note}", short, "3", CHAIN_COMMAND, rate)
        out[key] = row, frame[frame["model"] == model].assign(method=key)[["method", "seed", "task", "category",
                                                                             "score"]]
    return out


def _paper3_tables(backbone: str, keys: set[str] | None = None) -> dict[str, tuple[Row, pd.DataFrame]]:
    """The Tables 1-2 page's rows (one training run each), of the row ids ``keys`` only (None: every row)."""
    compress, align = paper3_configs(backbone)
    tasks = list(TASKS)
    out = {}
    labels = tables_labels(backbone) if keys is None or keys & {"p3-compress", "p3-align"} else {}
    for key, config, short in (("p3-compress", compress, "compression only"), ("p3-align", align, "AutoRegEmbed")):
        if keys is not None and key not in keys:
            continue
        row = Row(labels[key], short, "3", command_for(config, SUITE), key)
        out[key] = row, records_frame(key, stored_per_task(AUTOREG_SCORES, score_identity(config), SUITE, tasks)
                                      ).assign(seed=config.seed)  # one training run
    for name in CONTRASTIVE:
        config = contrastive_config(name, align)
        key = baseline_id(name)
        if keys is not None and key not in keys:
            continue
        row = Row(baseline_label(name), "P3 baseline", "3",
                  "retrain the baseline (p3_tables standard) and score it on compact", key)
        out[key] = row, records_frame(key, stored_per_task(TRAINED_SCORES, trained_score_identity(config), SUITE,
                                                           tasks)).assign(seed=config.seed)
    return out


def paper3_hours(backbone: str = "smollm2-135m") -> dict[str, float]:
    """Training wall-clock hours behind Paper 3's rows, by row id: the independent chains and the budget-rule runs
    (steps and dev evaluations, mean over the seeds behind the row; stage 1 counted in both compression only and
    AutoRegEmbed), the Tables 1-2 configuration's stages and its baselines."""
    hours = {**paper3_budget_hours(backbone), **chain_hours(backbone)}
    compress, align = paper3_configs(backbone)
    stage1 = load_result(AUTOREG_RUNS, ar_run_params(compress))
    stage2 = load_result(AUTOREG_RUNS, ar_run_params(align))
    if stage1 is not None:
        hours["p3-compress"] = stage1["summary"]["train_seconds"] / 3600
        if stage2 is not None:
            hours["p3-align"] = (stage1["summary"]["train_seconds"] + stage2["summary"]["train_seconds"]) / 3600
    for name in CONTRASTIVE:
        record = load_result(TRAINED_RUNS, {"train": contrastive_config(name, align).identity()})
        if record is not None:
            hours[baseline_id(name)] = record["summary"]["train_seconds"] / 3600
    return hours


def _run_hours(record: dict | None) -> float:
    """A run record's steps and dev evaluations, in hours (0 for no record)."""
    if record is None:
        return 0.0
    return (record["summary"]["train_seconds"] + record["summary"].get("eval_seconds", 0.0)) / 3600


def chain_hours(backbone: str) -> dict[str, float]:
    """Wall-clock hours of the independent chains behind their rows (mean over those seeds): stage 1 for
    compression only, stage 1 and stage 2 for AutoRegEmbed."""
    frame = chain_frame(backbone)
    if frame.empty:
        return {}
    chains = [p3_independent.stored_chain(int(seed), backbone) for seed in sorted(frame["seed"].unique())]
    first = [_run_hours(chain["stage1"]) for chain in chains]
    both = [_run_hours(chain["stage1"]) + _run_hours(chain["stage2"]) for chain in chains]
    return {CHAIN_IDS[p3_converged.COMPRESSION]: sum(first) / len(first),
            CHAIN_IDS[p3_converged.AUTOREG]: sum(both) / len(both)}


def paper3_budget_hours(backbone: str) -> dict[str, float]:
    """Wall-clock hours of Paper 3's budget-rule runs (steps and dev evaluations, mean over seeds; stage 1 counted
    in both compression only and AutoRegEmbed)."""
    base = p3_converged.base_config(backbone)
    runs = p3_converged.run_table(base)
    frame, rows = paper3_budget_frame(backbone)
    if runs.empty or frame.empty:
        return {}
    runs = runs[[(m, s) in set(zip(frame["model"], frame["seed"])) for m, s in zip(runs["method"], runs["seed"])]]
    stage1 = p3_converged.compression_config(base)
    record = None if stage1 is None else load_result(AUTOREG_RUNS, ar_run_params(stage1))
    first = _run_hours(record)  # steps + evaluations, as the runs'
    hours = ({BUDGET_IDS[p3_converged.COMPRESSION]: first} if record is not None and p3_converged.AUTOREG in rows
             else {})
    for method, part in runs.groupby("method"):  # the runs behind the row's scores
        hours[BUDGET_IDS[method]] = (float(part["wall hours (run: steps + dev evaluations)"].mean())
                                 + (first if method == p3_converged.AUTOREG else 0.0))
    return hours


