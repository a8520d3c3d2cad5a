"""Paper 3 given a fair chance: the template chosen by principle, stage 1 under the budget rule, independent seeds.

* **The template** (:data:`PRINCIPLED`): the official form, adapted only where our backbone or length limit would
  change its meaning. No chat-turn token as BOS: the tokenizer's own document start where it adds one (gemma3's
  ``<bos>``), none where it adds none (SmolLM2's adds none, so the official code itself puts none there at
  inference; the official training code's BOS would be SmolLM2's chat token ``<|im_start|>``). The instruction or
  question is never cut: a long training input keeps its head and tail at our 160-token limit (the official code
  cuts on the right at 4,096 tokens, which stage 1's inputs rarely reach; at 160 a right cut drops T0's question in
  a third of them). Everything else as the official code writes it: the curly quote, the pieces, no newline at
  inference, the passage prompt. The book's template and the literal official form are sensitivity rows.
* **Stage 1 under the budget rule** (:func:`stage1_config`): constant learning rate after warm-up; the held-out
  reconstruction loss (stage 1's own objective) stops and selects, the compressed embedding's STS-B dev Spearman is
  recorded beside it at every evaluation (:func:`repro.training.budget.stage1_under_rule`). Why not stop on dev STS:
  the untrained compression tokens already score about 60 on STS-B dev (their states are a smooth average of the
  text), so a rule on dev STS would select stage 1's start and turn AutoRegEmbed into its "without compression"
  ablation, not give the method its chance. The cap (:data:`STAGE1_CAP`) is 600 steps of 8 (4,800 examples, 0.69
  epoch of our 6,963 training rows; the paper: 2 epochs of 16,382 at batch 32, about 32,800 examples): a run here
  must finish inside one working session (run folders do not outlive it), about 90 minutes on both cores with its
  evaluations; the curve shows whether the loss was still falling at the cap.
* **Independent seeds**: every seed trains its own stage 1 (distinct weights; seed -> data order), and its stage 2
  starts from that stage 1 only, so no two runs of a side share an upstream model.

``python -m repro.autoregembed.experiments.independent --seeds 0`` trains (or resumes) the runs; the pages read the
store.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from repro.autoregembed import train as ar_train
from repro.autoregembed.claims import BEATS_PROMPTS, COMPRESSION_BEATS
from repro.autoregembed.config import AlignConfig, CompressConfig
from repro.autoregembed.data import read_stage1, split_align
from repro.autoregembed.experiments import ablations, converged, search
from repro.autoregembed.experiments.baselines import stored_untrained
from repro.autoregembed.experiments.scores import SCORES_EXPERIMENT, evaluate_autoreg, score_identity
from repro.core.scoring import stored_per_task
from repro.store.runs import ensure_trained
from repro.training import budget
from repro.verdicts.run_units import FIXED

PRINCIPLED = {"template": "official", "cut": "head_tail", "bos": "tokenizer"}
SEEDS = (0, 1, 2)
BATCH = 8  # the book's stage-1 batch (the paper: 32); lr 1e-4 from the stage-1 learning-rate probe
STAGE1_CAP = 600  # steps (Paper 1's cap): what one session's run finishes (the paper: 2 epochs, stage1_cap(2))
VALIDATION_EXAMPLES = 64
ALIGN_LR = 5e-6  # the official code's stage-2 learning rate (fidelity; the paper's 7B runs)
STAGE1_DEV_PAIRS = 500  # STS-B dev pairs of the recorded dev curve (it selects nothing; all 1,500 cost 4 min a point)


def stage1_cap(epochs: float, batch: int = BATCH, data: str = "instruction") -> int:
    """Steps of ``epochs`` passes over stage 1's training rows (the held-out rows excluded) at ``batch``."""
    rows = len(read_stage1(data)) - VALIDATION_EXAMPLES
    return math.ceil(epochs * rows / batch)


def stage1_config(seed: int, backbone: str = "smollm2-135m", cap: int | None = None,
                  template: dict | None = None) -> CompressConfig:
    """Stage 1 of seed ``seed`` under the budget rule on its own objective (``template``: the input form's settings,
    :data:`PRINCIPLED` unless given)."""
    base = CompressConfig(backbone=backbone, batch_size=BATCH, lr=1e-4, max_length=160,
                          validation_examples=VALIDATION_EXAMPLES, warmup_steps=10, data="instruction", seed=seed,
                          **(PRINCIPLED if template is None else template))
    config = budget.stage1_under_rule(base, cap if cap is not None else STAGE1_CAP)
    return replace(config, validation_sts_pairs=STAGE1_DEV_PAIRS)


def stage2_config(seed: int, backbone: str = "smollm2-135m", template: dict | None = None) -> AlignConfig:
    """Stage 2 of seed ``seed``, from that seed's stage 1 only, under the budget rule with the cap, data and batch
    of the budget-rule page's search (:mod:`.search`: 300 steps of 8 from MEDI-NLI and SNLI, the same as its
    contrastive baselines), the official code's learning rate, one fused encoder and decoder call a step."""
    stage1 = stage1_config(seed, backbone, template=template)
    align = AlignConfig(compress=stage1, backbone=backbone, batch_size=BATCH, lr=ALIGN_LR, warmup_steps=10,
                        validation_triplets=300, data=search.DATA, fused=True, seed=seed, template=stage1.template,
                        cut=stage1.cut, bos=stage1.bos)
    return budget.under_budget_rule(align, search.CAP)


# The ablations run on every chain (>= 3 independent seeds each): Table 3's rows in the paper's order (without
# alignment is the chain's compression only), strategies 1-4 and the reference added, then the temperature x beta
# cells the tested Appendix F claims need (tau 1.0 against 0.05, beta 0.05 and 0.2 against 0.1, and tau 0.1 with beta
# 0.2 for "together"); the rest of the grid stays the ablation page's one run, labelled so.
ABLATIONS = ("no-compression", "js", "kl", "logsigmoid", "tanh", "strategy1", "strategy2", "strategy3", "strategy4",
             "reference-code")
ABLATION_GRID = ((1.0, 0.1), (0.05, 0.05), (0.05, 0.2), (0.1, 0.2))
ABLATION_IDS = [*ABLATIONS, *(ablations.grid_id(t, b) for t, b in ABLATION_GRID)]


def ablation_configs(seed: int, backbone: str = "smollm2-135m") -> dict[str, AlignConfig]:
    """Variant id (:data:`ABLATIONS`, then :func:`~.ablations.grid_id` of :data:`ABLATION_GRID`) -> the stage-2
    configuration of seed ``seed``'s chain with that one change (same stage 1, data, rule and seed)."""
    base = stage2_config(seed, backbone)
    configs = {variant: ablations.ablation_config(variant, base) for variant in ABLATIONS}
    return configs | {ablations.grid_id(t, b): replace(base, temperature=t, beta=b) for t, b in ABLATION_GRID}


def is_start(config: AlignConfig) -> bool:
    """Whether ``config``'s stored stage-2 run dev-selected the stage-1 model it started from (then it *is* that
    compression only, scored once as such); never for a run without stage 1, whose start is the untrained backbone."""
    return config.compress is not None and converged.selects_start(config)


STAGES = ("stage1", "stage2", "scores", "ablations")
# the page's tasks first, then the leaderboard's other tasks: a run folder does not outlive its session, so a chain is
# scored on every task a leaderboard row needs while its weights are at hand
SCORED_TASKS = list(dict.fromkeys([*converged.TASKS, *converged.LEADERBOARD_TASKS]))


def run(seeds: Sequence[int], stages: Sequence[str] = STAGES, backbone: str = "smollm2-135m",
        ablations: Sequence[str] | None = None) -> None:
    """Train (or resume) each seed's chain, stage by stage, and score it on the budget-rule page's final suite
    (:data:`SCORED_TASKS`: the page's tasks, then the leaderboard's): compression only from the seed's stage 1, and
    its stage 2 unless that dev-selected its start (then it *is* its stage 1); then the chain's ablations
    (:func:`ablation_configs`; ``ablations``: their ids, in that order, default all), each scored on the page's
    tasks unless it dev-selected its start."""
    unknown = set(stages) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stage(s) {sorted(unknown)}; valid: {', '.join(STAGES)}")
    if ablations is not None and set(ablations) - set(ABLATION_IDS):
        raise ValueError(f"unknown ablation(s) {sorted(set(ablations) - set(ABLATION_IDS))}; valid: "
                         f"{', '.join(ABLATION_IDS)}")
    for seed in seeds:
        align = stage2_config(seed, backbone)
        if "stage1" in stages:
            ensure_trained(ar_train.run_spec(align.compress))
        if "stage2" in stages:
            ensure_trained(ar_train.run_spec(align))
        if "scores" in stages:
            for config in (align.compress, *(() if converged.selects_start(align) else (align,))):
                evaluate_autoreg(config, converged.FINAL_SUITE, SCORED_TASKS, converged.EVAL_MAX_LENGTH)
        if "ablations" in stages:  # each trained, then scored on the page's tasks unless it is compression only
            configs = ablation_configs(seed, backbone)
            for config in (configs[v] for v in (ablations if ablations is not None else configs)):
                ensure_trained(ar_train.run_spec(config))
                if not is_start(config):
                    evaluate_autoreg(config, converged.FINAL_SUITE, converged.TASKS, converged.EVAL_MAX_LENGTH)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--stages", nargs="+", default=list(STAGES), choices=STAGES)
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--ablations", nargs="+", default=None, choices=ABLATION_IDS, metavar="ID",
                        help="the ablation stage's variant ids, in this order (default: all, Table 3's order first)")
    args = parser.parse_args(argv)
    run(args.seeds, args.stages, args.backbone, args.ablations)


if __name__ == "__main__":
    main()


# ----- read from the result store only (the pages) -----

def stored_chain(seed: int, backbone: str = "smollm2-135m") -> dict:
    """Seed ``seed``'s stored records: ``stage1`` and ``stage2`` (training records or None), and the stage-1
    weights digest stage 2 started from."""
    align = stage2_config(seed, backbone)
    stage1, stage2 = converged.run_record(align.compress), converged.run_record(align)
    return {"stage1": stage1, "stage2": stage2,
            "start_digest": None if stage2 is None else stage2["summary"].get("initial_digest")}


def stage1_curves(seeds: Sequence[int] = SEEDS, backbone: str = "smollm2-135m") -> pd.DataFrame:
    """The evaluations of every stored stage-1 seed: seed, step, examples seen, held-out reconstruction loss and the
    compressed embedding's STS-B dev Spearman (x100), and whether the step is the run's selected one."""
    rows = []
    for seed in seeds:
        record = stored_chain(seed, backbone)["stage1"]
        if record is None:
            continue
        selected = record["summary"]["selected_step"]
        rows += [{"seed": seed, "step": r["step"], "examples": r["examples_seen"],
                  "validation_loss": r["validation_loss"], "validation_sts": r.get("validation_sts"),
                  "selected": r["step"] == selected}
                 for r in record["rows"] if r.get("validation_loss") is not None]
    return pd.DataFrame(rows, columns=["seed", "step", "examples", "validation_loss", "validation_sts", "selected"])


def chain_table(seeds: Sequence[int] = SEEDS, backbone: str = "smollm2-135m") -> pd.DataFrame:
    """One row per seed: where its stage 1 stopped and what it selected (held-out loss and dev STS at step 0 and at
    the selected step), and its stage 2's stopping, selected step and dev signal (blank while not stored)."""
    out = []
    for seed in seeds:
        chain = stored_chain(seed, backbone)
        row = {"seed": seed}
        if chain["stage1"] is not None:
            s, history = chain["stage1"]["summary"], chain["stage1"]["rows"]
            start = next(r for r in history if r["step"] == 0 and r.get("validation_loss") is not None)
            at = next(r for r in history if r["step"] == s["selected_step"] and r.get("validation_loss") is not None)
            row.update({"stage 1 stopped at": s["steps"], "stage 1 early stop": s["stopped_early"],
                        "stage 1 selected step": s["selected_step"], "examples (stage 1)": s["selected_examples_seen"],
                        "loss at 0": start["validation_loss"], "loss selected": at["validation_loss"],
                        "dev STS at 0": start.get("validation_sts"), "dev STS selected": at.get("validation_sts")})
        if chain["stage2"] is not None:
            s = chain["stage2"]["summary"]
            row.update({"stage 2 stopped at": s["steps"], "stage 2 selected step": s["selected_step"],
                        "stage 2 dev selected": s["selected_signal"]})
        out.append(row)
    return pd.DataFrame(out)


def finding(seeds: Sequence[int] = SEEDS, backbone: str = "smollm2-135m") -> str:
    """What the stored independent chains say, in words: how many are stored, how each seed's stage 1 ended under
    the rule (held-out loss and dev STS from step 0 to the selected step) and whether its stage 2 was adopted."""
    table = chain_table(seeds, backbone)
    done = table[table["stage 1 selected step"].notna()] if "stage 1 selected step" in table else table.iloc[:0]
    if not len(done):
        return (f"no independent chain is stored yet (0 of {len(seeds)} seeds; command: python -m "
                "repro.autoregembed.experiments.independent --seeds " + " ".join(map(str, seeds)) + ")")
    parts = []
    for _, r in done.iterrows():
        stop = (f"stopped by the rule at step {int(r['stage 1 stopped at'])}" if r["stage 1 early stop"]
                else f"reached the {int(r['stage 1 stopped at'])}-step cap")
        text = (f"seed {int(r['seed'])}'s stage 1 {stop}; at its selected step {int(r['stage 1 selected step'])} the "
                f"held-out reconstruction loss is {r['loss selected']:.2f} (step 0: {r['loss at 0']:.2f}) and the "
                f"compressed embedding's STS-B dev is {r['dev STS selected']:.2f} (step 0: {r['dev STS at 0']:.2f})")
        if pd.notna(r.get("stage 2 selected step", float("nan"))):
            step = int(r["stage 2 selected step"])
            text += ("; its stage 2 dev-selected its start (step 0): not adopted" if step == 0 else
                     f"; its stage 2 dev-selected step {step} (dev {r['stage 2 dev selected']:.2f}): adopted")
        else:
            text += "; its stage 2 is not stored"
        parts.append(text)
    return f"{len(done)} of {len(seeds)} independent seeds are stored: " + "; ".join(parts)


def adoption(seeds: Sequence[int] = SEEDS, backbone: str = "smollm2-135m") -> str:
    """In how many stored chains dev adopted stage 2 (selected a step past its start), in words."""
    table = chain_table(seeds, backbone)
    if "stage 2 selected step" not in table or table["stage 2 selected step"].isna().all():
        return f"no independent chain's stage 2 is stored yet (0 of {len(seeds)} seeds)"
    steps = table["stage 2 selected step"].dropna()
    adopted = int((steps > 0).sum())
    return (f"dev adopted stage 2 (selected a step past its start) in {adopted} of the {len(steps)} independent "
            f"chain{'s' if len(steps) != 1 else ''} stored"
            + ("" if adopted else ", so AutoRegEmbed is its compression stage alone in every one"))


PAPER_STAGE1 = (16_382, 2, 32)  # the paper's stage 1 (quoted): PwC-Unique examples, epochs, batch
PAPER_STAGE2 = (50_000, 4)  # the paper's stage 2 (quoted): MEDI-NLI triplets, epochs


def scale_text(backbone: str = "smollm2-135m") -> str:
    """The chains' scale against the paper's, computed from the configurations and the data."""
    align = stage2_config(0, backbone)
    stage1 = align.compress
    rows = len(read_stage1(stage1.data)) - stage1.validation_examples
    seen = stage1.steps * stage1.batch_size
    examples, epochs, batch = PAPER_STAGE1
    triplets = len(split_align(align)[0])
    return (f"Stage 1's cap is {stage1.steps} steps × {stage1.batch_size} examples ({seen:,} examples, "
            f"{seen / rows:.2f} epoch of our {rows:,} instruction rows), against the paper's {epochs} epochs × "
            f"{examples:,} examples at batch {batch} (about {epochs * examples:,}, quoted); stage 2's is {align.steps} "
            f"steps × {align.batch_size} triplets ({align.steps * align.batch_size:,} of our {triplets:,} training "
            f"triplets), against the paper's {PAPER_STAGE2[0]:,} triplets × {PAPER_STAGE2[1]} epochs (quoted). "
            f"{backbone}, full fine-tuning, fp32 on 2 CPU cores")


def final_scores(seeds: Sequence[int] = SEEDS, backbone: str = "smollm2-135m", suite: str = converged.FINAL_SUITE,
                 tasks: Sequence[str] = converged.TASKS) -> tuple[pd.DataFrame, dict]:
    """The independent chains' stored scores on the budget-rule page's final suite and tasks (model, seed, unit,
    task, category, score x100): compression only from each seed's own stage 1, AutoRegEmbed from its stage 2 (its
    stage 1 where dev selected the start), both with the stage-1 weights digest as their unit (distinct per seed),
    beside the budget-rule page's best contrastive baseline at its seeds (independent runs) and the untrained
    backbone's last token and PromptEOL (training-free: unit :data:`~repro.verdicts.run_units.FIXED`, one value);
    records keyed (model, seed, task). A seed with a task missing is left out (no mixed task sets)."""
    frames, records = [], {}
    for seed in seeds:
        align = stage2_config(seed, backbone)
        compression = stored_per_task(SCORES_EXPERIMENT,
                                                score_identity(align.compress, converged.EVAL_MAX_LENGTH), suite,
                                                tasks)
        if len(compression) < len(tasks):
            continue
        digest = next(iter(compression.values())).get("weights_sha256", f"seed {seed}")
        autoreg = compression if converged.selects_start(align) else converged.stored_scores(align, suite, tasks)
        for label, found in ((converged.COMPRESSION, compression), (converged.AUTOREG, autoreg)):
            if len(found) == len(tasks):
                frames.append(converged.task_frame(found, model=label, seed=seed, unit=f"stage 1 {digest}"))
                records.update({(label, seed, t): r for t, r in found.items()})
    if frames:  # the contrastive side: the budget-rule page's selected baseline, its own independent runs
        baseline, found = converged.final_scores(search.base_config(backbone), converged.SEEDS, suite, tasks,
                                                 sides=["baseline"])  # its AutoRegEmbed is superseded: not read
        frames.append(baseline[baseline["model"] == converged.BASELINE])
        records.update({k: r for k, r in found.items() if k[0] == converged.BASELINE})
        untrained = stored_untrained(backbone, suite, converged.EVAL_MAX_LENGTH)
        for label in FIXED_REFERENCES:  # training-free: one fixed value a side, where stored on every task
            found = {t: untrained[label][t] for t in tasks if t in untrained[label]}
            if len(found) == len(tasks):
                frames.append(converged.task_frame(found, model=label, seed=0, unit=FIXED))
                records.update({(label, 0, t): r for t, r in found.items()})
    columns = ["model", "seed", "unit", "task", "category", "score"]
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)), records


# within a chain, AutoRegEmbed (its stage 2) and compression only (its stage 1) share the chain's stage 1: their
# comparison pairs the two runs of each chain (repro.verdicts.paired_runs); every other pair of sides is independent
PAIRED = {frozenset((converged.AUTOREG, converged.COMPRESSION))}
FIXED_REFERENCES = ("last token", "PromptEOL")  # the untrained backbone's training-free methods the claims compare
# alignment over compression only, and against contrastive training (converged.CLAIMS); compression only against the
# untrained last token, AutoRegEmbed against PromptEOL (training-free: one-sample tests of the chains' runs): STS and
# retrieval each
CLAIMS = converged.CLAIMS + [(claim, a, b, category, "better") for claim, a, b in (
    (COMPRESSION_BEATS, converged.COMPRESSION, "last token"), (BEATS_PROMPTS, converged.AUTOREG, "PromptEOL"))
    for category in ("STS", "Retrieval")]
