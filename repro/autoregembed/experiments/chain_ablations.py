"""Paper 3's ablations on the independent chains, read from the store: each chain's variants (Table 3's rows,
strategies 1-4, the reference added and the tested temperature x beta cells; trained by
:func:`repro.autoregembed.experiments.independent.run`, stage ``ablations``) as runs, beside the chain's full loss
(its AutoRegEmbed) and compression only, with the stage-1 model each starts from as its unit.

A variant whose stage 2 dev-selected its start *is* its chain's compression only (the same weights, scored once as
such); "without compression" starts from the raw backbone, so each of its runs is its own unit. A claim is tested
with the chains as units, paired within each chain (:func:`repro.verdicts.seeds.seeded_claims` with ``paired``: the
two runs of one chain share its stage 1, or its data order and seed for "without compression"): it needs 3 chains
holding both models, and two models that are one model run by run are *not testable*, never a verdict."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from repro.autoregembed.claims import FULL_VARIANT, GRID_CHOICE, ablation_claim_list, grid_claim_list
from repro.autoregembed.experiments import converged, independent
from repro.autoregembed.experiments.ablations import COMPRESSION_ONLY, LABELS, grid_id, grid_label
from repro.verdicts.seeds import seeded_claims

COLUMNS = ["model", "seed", "unit", "task", "category", "score"]


def variant_labels() -> dict[str, str]:
    """Variant id -> the display label the ablation page and the claims use (grid cells as ``tau=T, beta=B``)."""
    labels = {variant: LABELS[variant] for variant in independent.ABLATIONS}
    return labels | {grid_id(t, b): grid_label(t, b) for t, b in independent.ABLATION_GRID}


def status(seeds: Sequence[int] = independent.SEEDS, backbone: str = "smollm2-135m") -> pd.DataFrame:
    """Seed x variant: where each chain's ablation run stands: not trained, trained and dev-selected its start
    (compression only), or adopted at a step (with its dev score)."""
    labels = variant_labels()
    table = {}
    for seed in seeds:
        column = {}
        for variant, config in independent.ablation_configs(seed, backbone).items():
            record = converged.run_record(config)
            if record is None:
                column[labels[variant]] = "not trained"
                continue
            step = record["summary"]["selected_step"]
            dev = f"dev {record['summary']['selected_signal']:.2f}"
            column[labels[variant]] = ("start (= compression only)" if independent.is_start(config) else
                                       f"step 0 (the untrained backbone, {dev})" if step == 0 else
                                       f"step {step} ({dev})")
        table[f"seed {seed}"] = column
    return pd.DataFrame(table)


def scores(seeds: Sequence[int] = independent.SEEDS, backbone: str = "smollm2-135m",
           suite: str = converged.FINAL_SUITE, tasks: Sequence[str] = converged.TASKS) -> pd.DataFrame:
    """The chains' ablation runs in one long frame (:data:`COLUMNS`; scores x100): per seed whose compression only
    is scored on every task, compression only, the full loss (the chain's AutoRegEmbed) and each variant stored on
    every task, labelled as the ablation page labels them; a run's unit is the stage-1 weights it starts from (a
    run without stage 1: its own). A variant that started from other stage-1 weights than the chain's scored
    compression only (a stage 1 retrained after its run folder was lost) is its own unit, and never stands in for
    that compression only."""
    labels = variant_labels()
    chains, _ = independent.final_scores(seeds, backbone, suite, tasks)
    frames = []
    for seed in sorted(chains[chains["model"] == converged.COMPRESSION]["seed"].unique()) if len(chains) else []:
        chain = chains[chains["seed"] == seed]
        compression = chain[chain["model"] == converged.COMPRESSION]
        frames.append(compression.assign(model=COMPRESSION_ONLY))
        full = chain[chain["model"] == converged.AUTOREG]
        # the full loss is also the grid's chosen cell (the same run): Appendix F's claims compare against it
        frames += [full.assign(model=FULL_VARIANT), full.assign(model=grid_label(*GRID_CHOICE))]
        unit = compression["unit"].iloc[0]
        for variant, config in independent.ablation_configs(int(seed), backbone).items():
            record = converged.run_record(config)
            if record is None:
                continue
            start = record["summary"].get("initial_digest")
            retrained = config.compress is not None and start is not None and f"stage 1 {start}" != unit
            if independent.is_start(config):
                if not retrained:  # a start-selected run from a retrained stage 1 is other weights: not scored here
                    frames.append(compression.assign(model=labels[variant]))
                continue
            found = converged.stored_scores(config, suite, tasks)
            if len(found) == len(tasks):
                own = (f"stage 1 {start}" if retrained else unit) if config.compress is not None else \
                    f"{labels[variant]}, seed {seed}"
                frames.append(converged.task_frame(found, model=labels[variant], seed=int(seed), unit=own))
    return pd.concat(frames, ignore_index=True)[COLUMNS] if frames else pd.DataFrame(columns=COLUMNS)


def claims(frame: pd.DataFrame) -> list[tuple]:
    """The ablation page's statements (Table 3 and its appendices, Appendix F's tested cells) whose two models the
    chains' ``frame`` holds, as ``(claim, a, b, category, expected)``."""
    models = list(dict.fromkeys(frame["model"])) if len(frame) else []
    listed, _ = ablation_claim_list(models)
    return listed + grid_claim_list(models)


def tested(seeds: Sequence[int] = independent.SEEDS, backbone: str = "smollm2-135m") -> pd.DataFrame | None:
    """The chains' ablation statements tested with the runs as units (:func:`repro.verdicts.seeds.seeded_claims`),
    or None while no chain holds an ablation run (then the one-run ablations are the current ones); the chains it
    read are in ``attrs["seeds"]``."""
    frame = scores(seeds, backbone)
    if frame.empty or set(frame["model"]) <= {FULL_VARIANT, COMPRESSION_ONLY, grid_label(*GRID_CHOICE)}:
        return None
    table = pd.concat([seeded_claims(_common_chains(frame, claim[1], claim[2]), [claim], paired=True)
                       for claim in claims(frame)
                       if len(_common_chains(frame, claim[1], claim[2]))], ignore_index=True)
    table.attrs["seeds"] = sorted(int(s) for s in frame["seed"].unique())
    return table


def _common_chains(frame: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """``frame`` restricted to the chains (seeds) that hold both models: an ablation is one change to its own chain's
    full loss, so a variant trained on one chain is compared with that chain's full loss (the paired runs test,
    :mod:`repro.verdicts.paired_runs`), not with the mean over chains whose stage-1 spread (more than 10 STS-B dev
    points between our chains) would pass for the variant's effect."""
    common = set(frame.loc[frame["model"] == a, "seed"]) & set(frame.loc[frame["model"] == b, "seed"])
    return frame[frame["seed"].isin(common)]


def finding(seeds: Sequence[int] = independent.SEEDS, backbone: str = "smollm2-135m") -> str:
    """What the chains' ablation runs say so far, in words: how many are trained of how many, how many dev-selected
    their start (so are compression only), how many adopted a step past it, and which chains hold them."""
    table = status(seeds, backbone)
    trained = table != "not trained"
    at_start = table == "start (= compression only)"
    if not trained.to_numpy().any():
        return (f"no ablation run on the independent chains is trained yet (0 of {table.size}: {len(table)} variants x "
                f"{len(seeds)} chains; command: python -m repro.autoregembed.experiments.independent --stages "
                "ablations --seeds " + " ".join(map(str, seeds)) + ")")
    holding = [c.removeprefix("seed ") for c in table.columns if trained[c].any()]
    adopted = int(table.map(lambda v: v.startswith("step ") and not v.startswith("step 0 ")).to_numpy().sum())
    n = int(trained.to_numpy().sum())
    return (f"{n} of the {table.size} ablation runs on the independent chains {'is' if n == 1 else 'are'} trained "
            f"({len(table)} variants x {len(seeds)} chains; chain{'s' if len(holding) > 1 else ''} "
            f"{', '.join(holding)} so far); {int(at_start.to_numpy().sum())} dev-selected their start, so are their "
            f"chain's compression only, and {adopted} adopted a stage-2 step")


def dev_curves(seeds: Sequence[int] = independent.SEEDS, backbone: str = "smollm2-135m") -> pd.DataFrame:
    """The budget rule's STS-B dev curve (x100, at every evaluated step) of each stored chain's full loss (its own
    stage 2) and of each of its stored ablation runs: columns ``run`` ("variant, seed s"), ``step``,
    ``validation_sts`` and ``selected`` (the run's dev-selected step); empty while none is stored."""
    labels = variant_labels()
    runs = {}
    for seed in seeds:
        runs[f"{FULL_VARIANT}, seed {seed}"] = independent.stage2_config(seed, backbone)
        runs |= {f"{labels[v]}, seed {seed}": c for v, c in independent.ablation_configs(seed, backbone).items()}
    rows = []
    for run, config in runs.items():
        record = converged.run_record(config)
        if record is None:
            continue
        chosen = record["summary"].get("selected_step")
        rows += [{"run": run, "step": r["step"], "validation_sts": r["validation_sts"], "selected": r["step"] == chosen}
                 for r in record["rows"] if r.get("validation_sts") is not None]
    return pd.DataFrame(rows, columns=["run", "step", "validation_sts", "selected"])
