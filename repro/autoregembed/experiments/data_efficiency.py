"""Data efficiency (paper Figures 3 and 1): each method trained on nested subsets of the triplets, per seed."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from repro.autoregembed.config import AlignConfig
from repro.autoregembed.experiments.baselines import UNTRAINED, contrastive_config
from repro.autoregembed.experiments.configs import steps_for
from repro.autoregembed.experiments.scores import SCORES_EXPERIMENT, evaluate_autoreg, score_identity
from repro.autoregembed.experiments.tables import method_scores, sts_average
from repro.core.scoring import stored_per_task
from repro.core.tasks import STS_TASKS
from repro.store.fingerprint import params_hash
from repro.store.identity import config_identity
from repro.store.lanes import in_lane_order
from repro.training.budget_curves import task_frame
from repro.training.evaluation import evaluate_trained


def data_efficiency_configs(base: AlignConfig, sizes: Sequence[int], seeds: Sequence[int],
                            epochs: float) -> dict[tuple[int, int], AlignConfig]:
    """(training-set size, seed) -> the stage-2 configuration: ``epochs`` passes over the seeded subset of
    ``size`` triplets (steps = epochs x size / batch); stage 1 is shared (trained once, its own seed)."""
    for name, values in (("sizes", sizes), ("seeds", seeds)):
        if not values or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
            raise ValueError(f"{name} must be a non-empty list of integers, got {values!r}")
        if len(set(values)) != len(values):
            raise ValueError(f"{name} has duplicates: {values!r}")
    if min(sizes) < 1:  # 0 would mean "every triplet" to the training config
        raise ValueError(f"sizes must be positive (a number of training triplets), got {sizes!r}")
    if isinstance(epochs, bool) or not isinstance(epochs, (int, float)) or not epochs > 0:
        raise ValueError(f"epochs must be a positive number, got {epochs!r}")
    return {(size, seed): AlignConfig(**(vars(base) | {"train_examples": size, "seed": seed,
                                                       "steps": steps_for(size, epochs, base.batch_size)}))
            for size in sizes for seed in seeds}


def data_efficiency_schedule(base: AlignConfig, sizes: Sequence[int], epochs: float) -> pd.DataFrame:
    """Per training-set size: the optimizer steps every method takes and whether the warm-up ends within them
    (with fewer steps than warm-up steps the learning rate never reaches its peak, for every method alike; the
    warm-up is linear from 0 at step 0, as transformers' schedulers do)."""
    rows = []
    for size in sizes:
        steps = steps_for(size, epochs, base.batch_size)
        rows.append({"training triplets": size, "steps": steps, "warm-up steps": base.warmup_steps,
                     "peak lr reached": steps > base.warmup_steps,
                     "highest lr used / peak": min(1.0, (steps - 1) / base.warmup_steps) if base.warmup_steps else 1.0})
    return pd.DataFrame(rows).set_index("training triplets")


def data_efficiency_scores(base: AlignConfig, sizes: Sequence[int], seeds: Sequence[int], epochs: float,
                           methods: Sequence[str], suite: str = "compact", tasks: Sequence[str] | None = None,
                           recompute: bool = False) -> pd.DataFrame:
    """STS average per method x training-set size x seed (:func:`data_efficiency_configs`)."""

    tasks = list(tasks) if tasks is not None else STS_TASKS

    def run(method: str, align: AlignConfig) -> pd.DataFrame:
        if method == "AutoRegEmbed":
            return evaluate_autoreg(align, suite, tasks, progress=False, recompute=recompute)
        return evaluate_trained(contrastive_config(method, align), suite, tasks, progress=False, recompute=recompute)

    configs = data_efficiency_configs(base, sizes, seeds, epochs)
    frames = in_lane_order({(method, size, seed): lambda method=method, align=align: run(method, align)
                            for (size, seed), align in configs.items() for method in methods})
    return pd.DataFrame([{"method": method, "examples": size, "seed": seed, "steps": configs[size, seed].steps,
                          "unit": run_unit(method, configs[size, seed]), "STS average": sts_average(frame)}
                         for (method, size, seed), frame in frames.items()])


def run_unit(method: str, align: AlignConfig) -> str:
    """What makes a curve point's run independent: AutoRegEmbed's stage 2 is its stage 1 (every seed that starts
    from one stage 1 is one run), a contrastive baseline's seed is its own run."""
    if method == "AutoRegEmbed" and align.compress is not None:
        return f"stage 1 {params_hash(config_identity(align.compress))}"
    return f"run {align.seed}"


REFERENCES = [*UNTRAINED, "compression only"]  # methods that train on no triplets: Figure 3's flat lines


def data_efficiency_references(base: AlignConfig, references: Sequence[str], suite: str = "compact",
                               tasks: Sequence[str] | None = None, recompute: bool = False) -> pd.Series:
    """STS average of each reference method (trained on no triplet: the untrained backbone's methods and
    compression only, i.e. AutoRegEmbed before stage 2) on the data-efficiency page's tasks, by label.
    ``.attrs["compression only weights"]``: the digest of the weights compression only was scored from."""
    unknown = set(references) - set(REFERENCES)
    if unknown:
        raise ValueError(f"unknown reference(s) {sorted(unknown)}; valid: {', '.join(REFERENCES)}")
    if "compression only" in references and base.compress is None:
        raise ValueError("'compression only' needs a stage 1 (this configuration has none)")
    if not references:
        return pd.Series(dtype=float, name="STS average")
    scores = method_scores(base, suite, list(tasks) if tasks is not None else STS_TASKS, references,
                           recompute=recompute)
    series = pd.Series({label: sts_average(scores[scores.method == label]) for label in references},
                       name="STS average")
    if "compression only" in references:
        series.attrs["compression only weights"] = scores.loc[scores.method == "compression only",
                                                              "weights_sha256"].iloc[0]
    return series


def pareto_front(points: pd.DataFrame, x: str = "examples", y: str = "STS average") -> pd.Series:
    """True for the points no other point dominates (no more training examples and a higher STS average, or
    fewer examples and no lower average)."""
    xs, ys = points[x].to_numpy(), points[y].to_numpy()
    return pd.Series([not any((xs <= xs[i]) & (ys >= ys[i]) & ((xs < xs[i]) | (ys > ys[i])))
                      for i in range(len(points))], index=points.index)


def stored_autoreg_curve(base: AlignConfig, sizes: Sequence[int], seeds: Sequence[int], epochs: float,
                         suite: str = "compact", tasks: Sequence[str] | None = None) -> pd.DataFrame:
    """AutoRegEmbed's points of the data-efficiency curve (:func:`data_efficiency_scores`' rows) whose tasks are
    all stored, read only: never trains or scores. What a page needs to hold its single-seed verdicts to the
    curve's measured seed spread (:func:`repro.autoregembed.claims.seed_spread`) without running the curve."""
    rows = []
    for (size, seed), align in data_efficiency_configs(base, sizes, seeds, epochs).items():
        average = _stored_sts_average(align, suite, tasks)
        if average is not None:
            rows.append({"method": "AutoRegEmbed", "examples": size, "seed": seed, "steps": align.steps,
                         "unit": run_unit("AutoRegEmbed", align), "STS average": average})
    return pd.DataFrame(rows, columns=["method", "examples", "seed", "steps", "unit", "STS average"])


def _stored_sts_average(config, suite: str, tasks: Sequence[str] | None) -> float | None:
    """The STS average (x100) of a trained encoder's stored scores on ``tasks`` (every STS task if None), read
    only; None unless every task is stored."""
    tasks = list(tasks) if tasks is not None else STS_TASKS
    found = stored_per_task(SCORES_EXPERIMENT, score_identity(config), suite, tasks)
    return sts_of(found) if len(found) == len(tasks) else None


def sts_of(found: dict) -> float:
    """The STS average (x100) of stored per-task score records (NaN without an STS task)."""
    frame = task_frame(found)
    sts = frame[frame.category == "STS"]["score"]
    return float(sts.mean()) if len(sts) else float("nan")


def missing_autoreg(base: AlignConfig, sizes: Sequence[int], seeds: Sequence[int], epochs: float,
                    references: Sequence[str], suite: str = "compact", tasks: Sequence[str] | None = None) -> list[str]:
    """What the store lacks of AutoRegEmbed's points of the curve under ``base`` and of its compression only (when
    a reference), read only (empty: complete)."""
    todo = []
    stored = stored_autoreg_curve(base, sizes, seeds, epochs, suite, tasks)
    if len(stored) < len(sizes) * len(seeds):
        todo.append(f"AutoRegEmbed ({base.template} template): {len(stored)} of {len(sizes) * len(seeds)} "
                    "data-efficiency runs scored")
    if "compression only" in references:
        if _stored_sts_average(base.compress, suite, tasks) is None:
            todo.append(f"compression only ({base.template} template) on the '{suite}' suite")
    return todo


def with_autoreg_of(other: AlignConfig, curve: pd.DataFrame, flat: pd.Series, sizes: Sequence[int],
                    seeds: Sequence[int], epochs: float, suite: str = "compact",
                    tasks: Sequence[str] | None = None) -> tuple[pd.DataFrame, pd.Series]:
    """``curve`` and ``flat`` with AutoRegEmbed's points and compression only taken from ``other`` (e.g. the same
    page under the other input template; read only, complete: :func:`missing_autoreg`); the contrastive baselines
    and the untrained references do not depend on AutoRegEmbed's configuration and stay as they are."""
    todo = missing_autoreg(other, sizes, seeds, epochs, list(flat.index), suite, tasks)
    if todo:
        raise LookupError("not stored: " + "; ".join(todo))
    points = stored_autoreg_curve(other, sizes, seeds, epochs, suite, tasks)
    swapped = pd.concat([curve[curve.method != "AutoRegEmbed"], points], ignore_index=True)
    references = flat.copy()
    if "compression only" in references.index:
        references["compression only"] = _stored_sts_average(other.compress, suite, tasks)
    return swapped, references
