"""Paper 3 under the budget rule: the dev-selected configurations of the declared search (:mod:`.search`), their
seeds at the converged budget, and the budget curves of compression only vs AutoRegEmbed vs the best contrastive
baseline, each comparison with its paired tests.

* :func:`selected_configs`: each side's dev-selected configuration (None while its search is incomplete).
* :func:`final_scores`: per-task scores (x100) of the selected configurations at every stored seed, beside
  compression only. There is one stage 1, so compression only has one set of weights: its scores stand at every
  seed of AutoRegEmbed and count as one run (:func:`repro.verdicts.run_units.distinct_runs`); the claims are tested
  with the runs as units (:func:`repro.verdicts.seeds.seeded_claims`), a run's unit being its stage 1 (``unit``).
* A seed whose run dev-selects step 0 (stage 2 lowered dev from its first update) *is* its stage 1: its final
  weights are the ones it started from (checked: same digest), so its scores are compression only's, read from
  their key and never recomputed under another (:func:`selects_start`, :func:`start_selected_seeds`). Its
  difference from compression only is 0 on every task by construction; the pages say why.
* :func:`budget_curves`: the scores at the budget points of the seed-0 runs (the doubling grid of evaluated steps
  and the dev-selected step, from one constant-learning-rate run), with compression only as the flat line it is
  (the start of every stage-2 run); :func:`curve_comparisons` tests AutoRegEmbed against each at every budget
  (:mod:`repro.training.budget_curves`).

Read from the result store only; :func:`main` trains and scores (``python -m
repro.autoregembed.experiments.converged``), after the search (``python -m repro.autoregembed.experiments.search``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from repro.autoregembed import train as ar_train
from repro.autoregembed.claims import ALIGNMENT, BEATS_CONTRASTIVE
from repro.autoregembed.config import AlignConfig
from repro.autoregembed.experiments.scores import (
    RETRIEVAL_TASKS,
    SCORES_EXPERIMENT,
    autoreg_embedder,
    evaluate_autoreg,
    evaluate_autoreg_budget_points,
    score_identity,
)
from repro.autoregembed.experiments.search import SIDE_NAMES, SIDES, base_config, selected_config, selected_sides
from repro.core.scoring import evaluate_per_task, stored_per_task
from repro.core.tasks import STS_TASKS
from repro.core.tasks import TASKS as ALL_TASKS
from repro.store.fingerprint import weights_digest
from repro.store.results import load_result
from repro.store.runs import ensure_trained
from repro.training import budget, contrastive
from repro.training import evaluation as contrastive_scores
from repro.training.budget import run_budget
from repro.training.budget_curves import (
    budget_comparison,
    budget_verdict,
    curve_steps,
    flat_curve,
    stored_curve,
    task_frame,
)
from repro.training.contrastive import TrainConfig

SEEDS = (0, 1, 2)
CURVE_SUITE = "small"
FINAL_SUITE = "compact"
TASKS = STS_TASKS + RETRIEVAL_TASKS
LEADERBOARD_TASKS = tuple(ALL_TASKS)  # every task of the book's suites (the leaderboard's rows)
EVAL_MAX_LENGTH = 512
COMPRESSION = "compression only"
LABELS = {side: ("best " if side == "baseline" else "") + name for side, name in SIDE_NAMES.items()}
AUTOREG, BASELINE = LABELS["autoregembed"], LABELS["baseline"]
CLAIMS = [(ALIGNMENT, AUTOREG, COMPRESSION, category, "better") for category in ("STS", "Retrieval")] + [
          (BEATS_CONTRASTIVE, AUTOREG, BASELINE, category, "better") for category in ("STS", "Retrieval")]


def selected_configs(base: AlignConfig) -> dict[str, AlignConfig | TrainConfig | None]:
    """Each side's dev-selected configuration (label -> config; None while its search is not complete)."""
    return {LABELS[side]: config for side, config in selected_sides(base, SIDES, selected_config).items()}


def at_seed(config: AlignConfig | TrainConfig, seed: int) -> AlignConfig | TrainConfig:
    """The same configuration at another training seed (stage 2's seed: every seed starts from the one stage 1)."""
    return replace(config, seed=seed)


def compression_config(base: AlignConfig, selected: dict | None = None):
    """The stage 1 that compression only stands for: the one the dev-selected AutoRegEmbed run starts from (the
    search's LoRA candidate has its own LoRA stage 1), or the base's while AutoRegEmbed's search is incomplete."""
    chosen = (selected if selected is not None else selected_configs(base)).get(AUTOREG)
    return (chosen or base).compress


def _score_key(config: AlignConfig | TrainConfig) -> tuple[str, dict]:
    """Where a Paper 3 method's scores are stored: (experiment, identity without suite and task)."""
    if isinstance(config, TrainConfig):
        return contrastive_scores.SCORES_EXPERIMENT, contrastive_scores.score_identity(config, EVAL_MAX_LENGTH)
    return SCORES_EXPERIMENT, score_identity(config, EVAL_MAX_LENGTH)


def stored_scores(config: AlignConfig | TrainConfig, suite: str, tasks: Sequence[str]) -> dict:
    return stored_per_task(*_score_key(config), suite, tasks)


def run_record(config: AlignConfig | TrainConfig) -> dict | None:
    if isinstance(config, TrainConfig):
        return load_result(contrastive.RUNS_EXPERIMENT, {"train": config.identity()})
    return load_result(ar_train.RUNS_EXPERIMENT, ar_train.run_params(config))


def selects_start(config: AlignConfig | TrainConfig) -> bool:
    """Whether ``config``'s stored stage-2 run dev-selected step 0, the stage-1 weights it started from (False for a
    contrastive baseline, or while the run is not stored)."""
    record = run_record(config) if isinstance(config, AlignConfig) else None
    return record is not None and record["summary"].get("selected_step") == 0


def start_digest(config: AlignConfig) -> str:
    """The digest of the stage-1 weights ``config``'s stored stage-2 run started from."""
    record = run_record(config)
    if record is None:
        raise LookupError(f"the stage-2 run of {config.lr:g}/{config.divergence} seed {config.seed} is not stored")
    return record["summary"]["initial_digest"]


def start_selected_seeds(base: AlignConfig, seeds: Sequence[int] = SEEDS) -> list[int]:
    """The seeds of the dev-selected AutoRegEmbed configuration whose stored run selected step 0."""
    config = selected_configs(base)[AUTOREG]
    return [s for s in seeds if config is not None and selects_start(at_seed(config, s))]


def check_start(config: AlignConfig) -> None:
    """A run that dev-selected step 0 must have saved the weights it started from: its final encoder's digest is
    the recorded ``initial_digest`` (else its scores cannot stand for compression only's)."""
    start = start_digest(config)
    folder = ar_train.run_spec(config, progress=False).folder
    if (folder / "final").is_dir():
        model, _ = ar_train.load_encoder(folder / "final")
        if weights_digest(model) != start:
            raise RuntimeError(f"{folder} selected step 0 but its final weights differ from its start "
                               f"({start}): its scores are not compression only's")


def stage1_digests(base: AlignConfig, seeds: Sequence[int] = SEEDS) -> dict[int, str]:
    """Seed -> the stage-1 weights digest the stored AutoRegEmbed run (the dev-selected configuration) at that seed
    started from. Every seed loads the one stage 1, but a stage 1 retrained in another session (CPU training is
    not bit-reproducible across machines) is other weights: compression only is scored from each."""
    config = selected_configs(base)[AUTOREG]
    out = {}
    for seed in seeds if config is not None else ():
        record = run_record(at_seed(config, seed))
        if record is not None and record["summary"].get("initial_digest"):
            out[seed] = record["summary"]["initial_digest"]
    return out


def compression_identity(stage1, digest: str | None, suite: str, tasks: Sequence[str]) -> dict:
    """Where compression only's scores from the stage-1 weights ``digest`` are stored: the Tables 1-2 key (shared
    with that page) unless it holds scores of other stage-1 weights, then that key + ``stage1_weights`` (so the
    committed scores of the other page are never overwritten, and no comparison mixes two stage 1s)."""
    plain = score_identity(stage1, EVAL_MAX_LENGTH)
    stored = stored_per_task(SCORES_EXPERIMENT, plain, suite, tasks)
    if digest is not None and any(r.get("weights_sha256") != digest for r in stored.values()):
        return {**plain, "stage1_weights": digest}
    return plain


def compression_scores(stage1, digest: str | None, suite: str, tasks: Sequence[str]) -> dict:
    """Compression only's stored per-task records from the stage-1 weights ``digest`` (:func:`compression_identity`)."""
    if stage1 is None:
        return {}
    return stored_per_task(SCORES_EXPERIMENT, compression_identity(stage1, digest, suite, tasks), suite, tasks)


def final_scores(base: AlignConfig, seeds: Sequence[int] = SEEDS, suite: str = FINAL_SUITE,
                 tasks: Sequence[str] = TASKS, sides: Sequence[str] = SIDES) -> tuple[pd.DataFrame, dict]:
    """The selected configurations' stored scores at every seed with all of ``tasks`` (model, seed, task,
    category, score x100), and compression only at each of AutoRegEmbed's seeds, from the stage-1 weights that
    seed's run started from; records keyed (model, seed, task) for the in-task tests. ``sides`` (of
    :data:`SIDES`): the searches read, e.g. the baseline's alone where the independent chains supersede this page's
    AutoRegEmbed (nothing of the other side is then read)."""
    frames, records = [], {}
    if set(sides) - set(SIDES):
        raise ValueError(f"unknown side(s) {sorted(set(sides) - set(SIDES))}; valid: {', '.join(SIDES)}")
    selected = selected_configs(base) if set(sides) == set(SIDES) else {
        LABELS[side]: config for side, config in selected_sides(base, sides, selected_config).items()}
    stage1 = compression_config(base, selected) if AUTOREG in selected else None
    digests = stage1_digests(base, seeds) if AUTOREG in selected else {}
    for label, config in selected.items():
        if config is None:
            continue
        for seed in seeds:
            if label == AUTOREG and selects_start(at_seed(config, seed)):  # the stage-1 encoder it started from
                found = compression_scores(stage1, digests.get(seed), suite, tasks)
            else:
                found = stored_scores(at_seed(config, seed), suite, tasks)
            records.update({(label, seed, t): r for t, r in found.items()})
            # the independent unit: AutoRegEmbed's is its stage 1 (seeds sharing it are one run), a baseline's its seed
            unit = f"stage 1 {digests.get(seed, 'unknown')}" if label == AUTOREG else f"run {seed}"
            if len(found) == len(tasks):  # a seed with missing tasks would mix task sets in means and spreads
                frames.append(task_frame(found, model=label, seed=seed, unit=unit))
                compression = compression_scores(stage1, digests.get(seed), suite, tasks) if label == AUTOREG else {}
                if len(compression) == len(tasks):  # the stage 1 this seed's run started from
                    frames.append(task_frame(compression, model=COMPRESSION, seed=seed, unit=unit))
                    records.update({(COMPRESSION, seed, t): r for t, r in compression.items()})
    columns = ["model", "seed", "unit", "task", "category", "score"]
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)), records


def run_table(base: AlignConfig, seeds: Sequence[int] = SEEDS) -> pd.DataFrame:
    """Each stored run of the selected configurations, with what it spent (:func:`repro.training.budget.run_budget`:
    where it stopped, the dev-selected step, examples, tokens, CPU and wall hours, the dev signal at step 0 and at
    the selected step)."""
    rows = []
    for label, config in selected_configs(base).items():
        for seed in seeds if config is not None else ():
            record = run_record(at_seed(config, seed))
            if record is None:
                continue
            rows.append({"method": label, "seed": seed, **run_budget(record)})
    return pd.DataFrame(rows)


def budget_curves(base: AlignConfig, seed: int = 0, suite: str = CURVE_SUITE,
                  tasks: Sequence[str] = TASKS) -> dict[str, tuple[pd.DataFrame, dict]]:
    """The budget curves of the selected configurations at ``seed`` (label -> curve) and compression only, flat at
    AutoRegEmbed's budget steps."""
    curves = {}
    selected = selected_configs(base)
    for label, config in selected.items():
        if config is None:
            continue
        config = at_seed(config, seed)
        record = run_record(config)
        experiment, identity = _score_key(config)
        curves[label] = stored_curve(experiment, identity, None if record is None else record["rows"], suite,
                                     tasks, label)
    stage1 = compression_config(base, selected)
    if AUTOREG in curves and stage1 is not None:
        digest = stage1_digests(base, [seed]).get(seed)
        curves[COMPRESSION] = flat_curve(compression_scores(stage1, digest, suite, tasks),
                                         curve_steps(curves[AUTOREG]), COMPRESSION)
    return curves


def curve_comparisons(curves: dict[str, tuple[pd.DataFrame, dict]]) -> dict[str, tuple[pd.DataFrame, str]]:
    """AutoRegEmbed against compression only and against the best contrastive baseline at every shared budget:
    the table of :func:`repro.training.budget_curves.budget_comparison` and its one-sentence verdict."""
    out = {}
    for other in (COMPRESSION, BASELINE):
        if AUTOREG in curves and other in curves:
            table = budget_comparison(curves[AUTOREG], curves[other])
            out[f"{AUTOREG} vs {other}"] = (table, budget_verdict(table))
    return out


def missing_work(base: AlignConfig, seeds: Sequence[int] = SEEDS, final_suite: str = FINAL_SUITE,
                 curve_suite: str = CURVE_SUITE, tasks: Sequence[str] = TASKS,
                 leaderboard_tasks: Sequence[str] = LEADERBOARD_TASKS) -> list[str]:
    """What is not stored yet, in the order :func:`compute` computes it (empty: the page is complete): the
    searches, compression only on both suites, every seed of each selection on ``final_suite`` (all tasks), every
    budget point of seed 0's runs (all tasks at each), and last the leaderboard's tasks of each seed on
    ``final_suite`` (those need the run's weights: a run folder gone means retraining)."""
    selected = selected_configs(base)
    todo = [f"the {side} search (then its seeds, budget points and leaderboard tasks)"
            for side, label in LABELS.items() if selected[label] is None]
    if todo:  # the rest depends on the selections
        return todo
    stage1 = compression_config(base, selected)
    for digest in sorted(set(stage1_digests(base, seeds).values())):
        todo += [f"{COMPRESSION} on {suite} (stage-1 weights {digest[:12]})" for suite in (final_suite, curve_suite)
                 if len(compression_scores(stage1, digest, suite, tasks)) < len(tasks)]
    frame, _ = final_scores(base, seeds, final_suite, tasks)
    start = set(start_selected_seeds(base, seeds))  # scored as compression only (listed above if missing)
    for label in LABELS.values():
        have = set(frame.loc[frame.model == label, "seed"])
        todo += [f"{label} seed {s} on {final_suite}" for s in seeds
                 if s not in have and not (label == AUTOREG and s in start)]
    curves = budget_curves(base, 0, curve_suite, tasks)
    for label, config in selected.items():
        record = run_record(at_seed(config, 0))
        expected = set() if record is None else set(budget.budget_points(
            record["summary"]["selected_step"], [s for s, _ in budget.evaluations(record["rows"])]))
        stored = set(curves[label][0].budget_step) if label in curves else set()
        if record is None or expected - stored:
            todo.append(f"{label} budget points (seed 0, {curve_suite}): "
                        + ("the run is not stored" if record is None else
                           "steps " + ", ".join(str(s) for s in sorted(expected - stored))))
    extra = [t for t in leaderboard_tasks if t not in tasks]
    if extra:
        board, _ = final_scores(base, seeds, final_suite, list(tasks) + extra)
        for label in [*LABELS.values(), COMPRESSION]:
            have = set(board.loc[board.model == label, "seed"])
            todo += [f"{label} seed {s} on {final_suite}, the leaderboard's {len(extra)} other tasks" for s in seeds
                     if s not in have and not (label == AUTOREG and s in start)
                     and (label != COMPRESSION or s in set(board.loc[board.model == AUTOREG, "seed"]) | start)]
    return todo


def compute(base: AlignConfig, seeds: Sequence[int] = SEEDS, sides: Sequence[str] = SIDES,
            budget_points: bool = False, final_suite: str = FINAL_SUITE, curve_suite: str = CURVE_SUITE,
            tasks: Sequence[str] = TASKS, progress: bool = True,
            leaderboard_tasks: Sequence[str] = LEADERBOARD_TASKS) -> list[str]:
    """Train (or load) and score what the page reads: each side's dev-selected configuration at every seed on
    ``final_suite``, (``budget_points``) seed 0's budget points on ``curve_suite``, and compression only on both
    suites from the stage 1 those runs started from. Stored runs and scores are skipped, so a killed call
    resumes. Returns :func:`missing_work`.

    On ``final_suite`` every seed and compression only are also scored on ``leaderboard_tasks`` (default: every
    task of the book's suites, the leaderboard's 19): a run's weights live in its run folder, which does not
    outlive the session, so the book's cross-paper rows are computed while the weights are at hand."""
    final_tasks = list(dict.fromkeys([*tasks, *leaderboard_tasks]))
    for side in sides:
        if side not in SIDES:
            raise ValueError(f"unknown side '{side}'; valid: {', '.join(SIDES)}")
    for side in sides:
        try:
            config = selected_config(side, base)
        except LookupError as error:
            raise LookupError(f"{error}: run `python -m repro.autoregembed.experiments.search --side {side}` "
                              "first") from None
        for seed in seeds:
            seeded = at_seed(config, seed)
            autoreg = isinstance(seeded, AlignConfig)
            if autoreg and run_record(seeded) is None:
                ensure_trained(ar_train.run_spec(seeded, progress))
            if autoreg and selects_start(seeded):
                check_start(seeded)  # its scores are compression only's, scored below from the same weights
            else:
                score = (evaluate_autoreg if autoreg else contrastive_scores.evaluate_trained)
                score(seeded, final_suite, tasks, progress=progress)  # trains the run if it is not stored
                if len(final_tasks) > len(tasks) and _weights_here(seeded):  # never retrain for the leaderboard alone
                    score(seeded, final_suite, final_tasks, progress=progress)
            if budget_points and seed == 0:
                (evaluate_autoreg_budget_points if autoreg else contrastive_scores.evaluate_budget_points)(
                    seeded, curve_suite, tasks, progress=progress)
            if autoreg and seed == seeds[0]:  # the stage 1 at hand, before the other seeds' runs (it is perishable)
                _score_compression_everywhere(base, seeds, final_suite, curve_suite, tasks, final_tasks, progress)
    if "autoregembed" in sides:  # (the stage 1 of seeds whose runs were stored since: nothing if the same)
        _score_compression_everywhere(base, seeds, final_suite, curve_suite, tasks, final_tasks, progress)
    return missing_work(base, seeds, final_suite, curve_suite, tasks, leaderboard_tasks)


def _score_compression_everywhere(base, seeds, final_suite, curve_suite, tasks, final_tasks, progress) -> None:
    """Compression only on both suites, and on the leaderboard's tasks too while its stage 1 is on this machine."""
    score_compression(base, seeds, (final_suite, curve_suite), tasks, progress)
    stage1 = compression_config(base)
    if len(final_tasks) > len(tasks) and stage1 is not None and _weights_here(stage1):
        score_compression(base, seeds, (final_suite,), final_tasks, progress)


def _weights_here(config) -> bool:
    """Whether a run's trained weights (either stage, or a contrastive baseline) are on this machine (its run
    folder's ``final``)."""
    return (contrastive.run_spec(config) if isinstance(config, TrainConfig) else ar_train.run_spec(config)).weights_here


def score_compression(base: AlignConfig, seeds: Sequence[int], suites: Sequence[str], tasks: Sequence[str],
                      progress: bool = True) -> None:
    """Compression only, scored from the stage-1 weights each stored AutoRegEmbed seed started from
    (:func:`compression_identity`). The stage 1 at hand must be those weights: a seed whose stage 1 was retrained
    since is named in the error (retrain that seed's stage 2, or its comparison keeps no compression only)."""
    stage1 = compression_config(base)
    for digest in sorted(set(stage1_digests(base, seeds).values())):
        for suite in suites:
            score_stage1(stage1, digest, suite, tasks, progress)


def score_stage1(stage1, digest: str, suite: str, tasks: Sequence[str], progress: bool = True,
                 label: str = COMPRESSION) -> None:
    """Compression only from the stage-1 weights ``digest`` (:func:`compression_identity`); the stage 1 at hand
    must be those weights, else a clear error (a stage 1 retrained since is other weights)."""
    def make_embedder():
        embedder = autoreg_embedder(stage1, EVAL_MAX_LENGTH, progress)
        if embedder.digest != digest:
            raise RuntimeError(f"stage 1 here has weights {embedder.digest[:12]}, but a stored stage-2 run "
                               f"started from {digest[:12]}: its compression only cannot be scored any more")
        return embedder, embedder.digest

    evaluate_per_task(SCORES_EXPERIMENT, compression_identity(stage1, digest, suite, tasks), suite, tasks,
                      make_embedder, progress, label=label, complete_units=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Train and score Paper 3's dev-selected configurations under the "
                                                 "budget rule (resumable; stored runs and scores are skipped).")
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--sides", nargs="+", choices=list(SIDES), default=list(SIDES))
    parser.add_argument("--budget-points", action="store_true",
                        help="also score seed 0's budget points on the small suite (from the run's snapshots)")
    args = parser.parse_args(argv)
    try:
        todo = compute(base_config(args.backbone), args.seeds, args.sides, args.budget_points)
    except LookupError as error:
        raise SystemExit(str(error)) from None
    print("\n".join(["still missing:", *todo]) if todo else "complete")


if __name__ == "__main__":
    main()
