"""The official-template check of Paper 3 under the budget rule.

The book's Paper 3 runs write AutoRegEmbed's encoder inputs in the book's template (a straight quote ending the
instruction, BOS only where the tokenizer adds one, the training newline kept at inference: ``template="book"``,
:data:`repro.autoregembed.config.TEMPLATES`). The official code writes them otherwise (a curly quote, BOS always,
no newline at inference). This check trains the budget-rule page's stage 1 once more under the official template
(seed 0), scores it as compression only on the page's tasks, and runs the dev-selected stage 2 from it under the
budget rule; the tables set each beside the book's seed-0 runs.

One training per template: the paired tests over tasks say how these two encoders differ, not how the templates
would differ over retrainings (the run-to-run noise is not inside them), so the check carries no ledger verdict.
It answers whether the template changes what the page concludes: whether stage 2 again dev-selects its start.

Three more stage 1s separate causes of the difference (:data:`VARIANTS`), one change each from the official
template: long training inputs keeping their head and tail (``cut="head_tail"``,
:data:`repro.autoregembed.config.CUTS`) instead of the official code's right cut (the official code cuts at 4,096
tokens, which stage 1's instruction data rarely reach; the book's stage 1 cuts at 160, a third of its inputs, and
the right cut drops the question T0's prompts put last); no BOS in front (``bos="tokenizer"``,
:data:`repro.autoregembed.config.BOS_RULES`: SmolLM2's BOS is its chat token ``<|im_start|>``, which the book's
template never puts there); and both changes at once, which says whether the two add up and measures what the rest
of the official form (:data:`REST`) costs against the book's template.

Read from the result store only; :func:`main` trains and scores (``python -m
repro.autoregembed.experiments.template_check``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from repro.autoregembed import train as ar_train
from repro.autoregembed.claims import ALIGNMENT
from repro.autoregembed.config import AlignConfig, with_template
from repro.autoregembed.experiments import converged
from repro.autoregembed.experiments.scores import SCORES_EXPERIMENT, evaluate_autoreg, score_identity
from repro.autoregembed.experiments.search import base_config
from repro.core.scoring import stored_per_task
from repro.store.runs import ensure_trained
from repro.training import budget
from repro.training.budget_curves import task_frame
from repro.verdicts.rule import MARGIN, claim_row, decide, runs_test, tasks_test
from repro.verdicts.wording import p_text

SEED = 0
CUT_VARIANT = "official, head and tail"  # the official template with the book's head-and-tail cut (stage 1 only)
BOS_VARIANT = "official, no BOS"  # the official template with BOS only where the tokenizer adds one (stage 1 only)
BOTH_VARIANT = "official, head and tail, no BOS"  # both changes at once: do the two causes add up? (stage 1 only)
VARIANTS = {CUT_VARIANT: {"cut": "head_tail"}, BOS_VARIANT: {"bos": "tokenizer"},  # one cause each, apart
            BOTH_VARIANT: {"cut": "head_tail", "bos": "tokenizer"}}  # and together
SINGLE_CAUSES = (CUT_VARIANT, BOS_VARIANT)
VARIANT_KEYS = {CUT_VARIANT: "cut", BOS_VARIANT: "bos", BOTH_VARIANT: "both"}  # short ids (the pages' glue names)
TEMPLATE_NAMES = {"book": "book template", "official": "official template",
                  CUT_VARIANT: "official template, head and tail kept", BOS_VARIANT: "official template, no BOS",
                  BOTH_VARIANT: "official template, head and tail kept, no BOS"}
# what each variant changes, as the finding words it
CAUSES = {CUT_VARIANT: "with the long training inputs of stage 1 keeping their head and tail instead of the right cut",
          BOS_VARIANT: "without the BOS token in front of every input (SmolLM2's BOS is its chat token <|im_start|>)",
          BOTH_VARIANT: "with both changes at once (head and tail kept, no BOS)"}
REST = ("the rest of the official form (the curly quote, its piece-wise tokenization, and at inference the right cut "
        "and no newline)")
STAGES = (converged.COMPRESSION, converged.AUTOREG)


def template_configs(base: AlignConfig) -> dict[str, AlignConfig] | None:
    """Template -> the dev-selected AutoRegEmbed configuration at seed 0 (its ``compress`` is the stage 1), the
    book's as stored and the same under the official template (None while the search is incomplete)."""
    selected = converged.selected_configs(base)[converged.AUTOREG]
    if selected is None:
        return None
    book = converged.at_seed(selected, SEED)
    official = with_template(book, "official")
    return {"book": book, "official": official,
            **{name: replace(official, **change, compress=replace(official.compress, **change))
               for name, change in VARIANTS.items()}}


def _stage_scores(base: AlignConfig, config: AlignConfig, template: str, suite: str,
                  tasks: Sequence[str]) -> dict[str, dict]:
    """Stage -> the stored per-task records of ``config``'s stage 1 (compression only) and its stage 2 (a stage 2
    that dev-selected step 0 *is* its stage 1: its scores are compression only's)."""
    record = converged.run_record(config)
    if template == "book":  # the page's own keys: compression only from the weights this run started from
        digest = converged.stage1_digests(base, [SEED]).get(SEED)
        stage1 = converged.compression_scores(config.compress, digest, suite, tasks)
    elif record is not None:  # the stage-1 weights the stage-2 run started from, never another training's
        stage1 = converged.compression_scores(config.compress, record["summary"]["initial_digest"], suite, tasks)
    else:
        stage1 = stored_per_task(SCORES_EXPERIMENT, score_identity(config.compress, converged.EVAL_MAX_LENGTH),
                                 suite, tasks)
    if record is None:
        return {converged.COMPRESSION: stage1}
    stage2 = stage1 if converged.selects_start(config) else converged.stored_scores(config, suite, tasks)
    return {converged.COMPRESSION: stage1, converged.AUTOREG: stage2}


def template_scores(base: AlignConfig, suite: str = converged.FINAL_SUITE,
                    tasks: Sequence[str] = converged.TASKS) -> pd.DataFrame:
    """Per-task scores (template, stage, task, category, score x100) of both templates' stages, where every task
    is stored."""
    configs = template_configs(base)
    frames = []
    for template, config in (configs or {}).items():
        for stage, records in _stage_scores(base, config, template, suite, tasks).items():
            if len(records) == len(tasks):
                frames.append(task_frame(records, template=TEMPLATE_NAMES[template], stage=stage))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["template", "stage", "task", "category", "score"])


def template_comparison(scores: pd.DataFrame) -> pd.DataFrame:
    """Per stage, other template and category (STS, retrieval, all tasks): that template minus the book's, with the
    paired tests over tasks (Wilcoxon for a difference, TOST against the declared margin for equivalence) and what
    they say of "the template makes no difference" (``equal``) for these two trainings."""
    rows = []
    book_name = TEMPLATE_NAMES["book"]
    for stage in STAGES:
        part = scores[scores.stage == stage]
        wide = part.pivot_table(index=["task", "category"], columns="template", values="score").reset_index()
        for name in [n for n in TEMPLATE_NAMES.values() if n != book_name]:
            if book_name in wide and name in wide:
                rows += [{"stage": stage, **row} for row in against_over_tasks(wide, name, book_name, "book")]
    return pd.DataFrame(rows)


def against_over_tasks(wide: pd.DataFrame, name: str, reference: str, label: str) -> list[dict]:
    """Template ``name`` against template ``reference`` (columns of ``wide``: one row per task, with its category),
    per category (STS, retrieval, all tasks): the means (the reference's under ``label``), the difference
    ("− label"), the tasks where ``name`` scores higher, and the paired tests over tasks (Wilcoxon for a difference,
    TOST against the declared margin for "no difference")."""
    rows = []
    for category in ("STS", "Retrieval", None):
        chosen = wide if category is None else wide[wide.category == category]
        test = tasks_test(chosen[name], chosen[reference], MARGIN)
        rows.append({"template": name, "tasks": category or "all", "n": test["tasks"],
                     label: chosen[reference].mean(), "this template": chosen[name].mean(),
                     f"− {label}": test["difference"], "wins": int((chosen[name] > chosen[reference]).sum()),
                     "p (difference)": test["p (difference)"], "p (within ±1)": test.get("p within margin (equal)"),
                     "no difference?": decide(test, "equal")})
    return rows


def official_runs(base: AlignConfig, suite: str = converged.FINAL_SUITE, tasks: Sequence[str] = converged.TASKS,
                  seeds: Sequence[int] = converged.SEEDS) -> pd.DataFrame:
    """Per-task scores (model, seed, task, category, score x100) of the official template's stage-2 runs at each of
    ``seeds`` stored on every task, and of compression only from the one stage 1 they start from (seed 0's)."""
    configs = template_configs(base)
    if configs is None:
        return pd.DataFrame(columns=["model", "seed", "task", "category", "score"])
    official = configs["official"]
    frames = []
    stage1 = _stage_scores(base, official, "official", suite, tasks)[converged.COMPRESSION]
    if len(stage1) == len(tasks):
        frames.append(task_frame(stage1, model=converged.COMPRESSION, seed=SEED))
    for seed in seeds:
        seeded = converged.at_seed(official, seed)
        if converged.run_record(seeded) is None:
            continue
        if converged.start_digest(seeded) != converged.start_digest(official):
            continue  # another stage 1's run: its compression only is not scored
        records = _stage_scores(base, seeded, "official", suite, tasks)[converged.AUTOREG]  # the one stage-2 rule
        if len(records) == len(tasks):
            frames.append(task_frame(records, model=converged.AUTOREG, seed=seed))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["model", "seed", "task", "category", "score"])


def alignment_under_official(runs: pd.DataFrame) -> pd.DataFrame:
    """Tables 1-2's "alignment improves on compression only" under the official template, per category (STS,
    retrieval), in the claims schema. Every stage-2 seed here starts from the one stage 1 (:func:`official_runs`),
    and compression only is that stage 1: one independent training run a side, so the row is untestable
    (:func:`repro.verdicts.rule.runs_test`); its difference is the seeds' mean minus compression only."""
    rows = []
    for category in ("STS", "Retrieval"):
        part = runs[runs.category == category]
        a = part[part.model == converged.AUTOREG].groupby("seed")["score"].mean()
        b = part[part.model == converged.COMPRESSION].groupby("seed")["score"].mean()
        if a.empty or b.empty:
            continue
        test = runs_test([a.mean()], b.to_numpy()[:1]) | {
            "units": f"{len(a)} stage-2 seed{'s' if len(a) > 1 else ''} from one stage 1 vs that stage 1 "
                     "(one independent run a side)"}
        rows.append(claim_row(ALIGNMENT, f"{converged.AUTOREG} vs {converged.COMPRESSION} (official template)",
                              category, "better", test, a, b, part.task.nunique()))
    return pd.DataFrame(rows)


def dev_curves(base: AlignConfig) -> pd.DataFrame:
    """Stage 2's dev signal (STS-B dev Spearman x100) per evaluated step under each template (stored runs)."""
    rows = []
    for template, config in (template_configs(base) or {}).items():
        record = converged.run_record(config)
        for step, signal in budget.evaluations(record["rows"]) if record else ():
            rows.append({"template": TEMPLATE_NAMES[template], "step": step, "dev": signal})
    return pd.DataFrame(rows, columns=["template", "step", "dev"])


def selections(base: AlignConfig) -> pd.DataFrame:
    """Per template, where stage 2 stopped and which step dev selected (step 0: stage 1 itself)."""
    rows = []
    for template, config in (template_configs(base) or {}).items():
        record = converged.run_record(config)
        if record is not None:
            summary = record["summary"]
            rows.append({"template": TEMPLATE_NAMES[template], "stopped at": summary["steps"],
                         "selected step": summary["selected_step"], "dev at selection": summary["selected_signal"]})
    return pd.DataFrame(rows, columns=["template", "stopped at", "selected step", "dev at selection"])


def selected_step(base: AlignConfig, seed: int) -> int | None:
    """The step the official template's stage 2 at ``seed`` dev-selected (None: not trained)."""
    configs = template_configs(base)
    record = converged.run_record(converged.at_seed(configs["official"], int(seed))) if configs else None
    return None if record is None else int(record["summary"]["selected_step"])


def missing_work(base: AlignConfig, suite: str = converged.FINAL_SUITE,
                 tasks: Sequence[str] = converged.TASKS, seeds: Sequence[int] = (SEED,)) -> list[str]:
    """What the check still lacks (empty: complete)."""
    configs = template_configs(base)
    if configs is None:
        return ["the budget rule's AutoRegEmbed search"]
    book = _stage_scores(base, configs["book"], "book", suite, tasks)
    todo = [f"the page's own seed-0 {stage}, book template, on {suite}" for stage in STAGES
            if len(book.get(stage, {})) < len(tasks)]
    official = configs["official"]
    stored = _stage_scores(base, official, "official", suite, tasks)
    todo += [] if len(stored[converged.COMPRESSION]) == len(tasks) else [
        f"{converged.COMPRESSION}, official template, on {suite}"]
    for name in VARIANTS:
        stage1 = _stage_scores(base, configs[name], name, suite, tasks)[converged.COMPRESSION]
        todo += [] if len(stage1) == len(tasks) else [f"{converged.COMPRESSION}, {TEMPLATE_NAMES[name]}, on {suite}"]
    if converged.AUTOREG not in stored:
        todo.append("the official template's stage 2 under the budget rule")
    elif len(stored[converged.AUTOREG]) < len(tasks):
        todo.append(f"{converged.AUTOREG}, official template, on {suite}")
    for seed in [s for s in seeds if s != SEED]:
        seeded = converged.at_seed(official, seed)
        if converged.run_record(seeded) is None:
            todo.append(f"the official template's stage 2 at seed {seed}")
        elif not converged.selects_start(seeded) and len(converged.stored_scores(seeded, suite, tasks)) < len(tasks):
            todo.append(f"{converged.AUTOREG}, official template, seed {seed}, on {suite}")
    return todo


def compute(base: AlignConfig, suite: str = converged.FINAL_SUITE, tasks: Sequence[str] = converged.TASKS,
            progress: bool = True, seeds: Sequence[int] = (SEED,)) -> list[str]:
    """Train (or load) and score the official template's stage 1 and its budget-rule stage 2 at each of ``seeds``
    (every seed's stage 2 starts from the one seed-0 stage 1, as the book's runs do; resumable)."""
    configs = template_configs(base)
    if configs is None:
        raise LookupError("the budget rule's AutoRegEmbed search is not complete: run "
                          "`python -m repro.autoregembed.experiments.search --side autoregembed` first")
    official = configs["official"]
    evaluate_autoreg(official.compress, suite, tasks, converged.EVAL_MAX_LENGTH, progress)  # trains stage 1
    for seed in dict.fromkeys([SEED, *seeds]):
        if seed != SEED:  # the cause separation (one stage 1 each) before the further seeds
            for name in VARIANTS:
                evaluate_autoreg(configs[name].compress, suite, tasks, converged.EVAL_MAX_LENGTH, progress)
        seeded = converged.at_seed(official, seed)
        ensure_trained(ar_train.run_spec(seeded, progress))
        if seed == SEED:  # compression only from the weights stage 2 started from (retrained since: a clear error)
            converged.score_stage1(official.compress, converged.start_digest(official), suite, tasks, progress,
                                   label=f"{converged.COMPRESSION}, official template")
        elif converged.start_digest(seeded) != converged.start_digest(official):
            raise RuntimeError(f"seed {seed}'s stage 2 started from other stage-1 weights than seed {SEED}'s: "
                               "its comparison with compression only has no stage 1 scored")
        if not converged.selects_start(seeded):
            evaluate_autoreg(seeded, suite, tasks, converged.EVAL_MAX_LENGTH, progress)
    for name in VARIANTS:
        evaluate_autoreg(configs[name].compress, suite, tasks, converged.EVAL_MAX_LENGTH, progress)
    return missing_work(base, suite, tasks, seeds)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Paper 3's official-template check (resumable).")
    parser.add_argument("--backbone", default="smollm2-135m")
    parser.add_argument("--seeds", type=int, nargs="+", default=[SEED],
                        help="stage-2 seeds under the official template (each starts from the seed-0 stage 1)")
    args = parser.parse_args(argv)
    try:
        todo = compute(base_config(args.backbone), seeds=args.seeds)
    except LookupError as error:
        raise SystemExit(str(error)) from None
    print("\n".join(["still missing:", *todo]) if todo else "complete")


def _compression_row(table: pd.DataFrame, template: str) -> pd.Series | None:
    rows = table[(table.stage == converged.COMPRESSION) & (table.tasks == "all") if len(table) else []]
    rows = rows[rows.template == TEMPLATE_NAMES[template]] if len(rows) else rows
    return rows.iloc[0] if len(rows) else None


def _versus_book(row: pd.Series) -> str:
    return (f"{row['this template']:.2f} against {row['book']:.2f} with the book's template over the page's "
            f"{int(row['n'])} tasks ({row['− book']:+.2f}, {int(row['wins'])} of {int(row['n'])} tasks higher, "
            f"{_wilcoxon(row['p (difference)'])}; no difference within ±{MARGIN:g}: {row['no difference?']})")


def _additivity(table: pd.DataFrame) -> str | None:
    """Whether the two causes add up (compression only, all tasks): each change's gain over the official template,
    their sum against the gain of both at once, and what is left against the book's template (None until all three
    variants are scored)."""
    rows = {name: _compression_row(table, name) for name in ("official", *VARIANTS)}
    if any(row is None for row in rows.values()):
        return None
    gain = {name: rows[name]["this template"] - rows["official"]["this template"] for name in VARIANTS}
    single = " and ".join(f"{gain[name]:+.2f}" for name in SINGLE_CAUSES)
    return (f"One at a time the two changes gain {single} points over the official template ("
            f"{sum(gain[n] for n in SINGLE_CAUSES):+.2f} summed), together {gain[BOTH_VARIANT]:+.2f}; {REST} "
            f"leaves {rows[BOTH_VARIANT]['− book']:+.2f} against the book's template")


def _wilcoxon(p: float) -> str:
    return "too few tasks for a Wilcoxon" if pd.isna(p) else f"Wilcoxon p = {p_text(p)}".replace("= <", "<")


def finding(base: AlignConfig, suite: str = converged.FINAL_SUITE, tasks: Sequence[str] = converged.TASKS) -> str:
    """The check's answer in one sentence (without its final period): compression only under the official template
    against the book's (all tasks, with its paired tests), which step the official template's stage 2
    dev-selected, and its runs as units against compression only; the causes: :func:`cause_findings`."""
    todo = [t for t in missing_work(base, suite, tasks) if not any(TEMPLATE_NAMES[n] + "," in t for n in VARIANTS)]
    if todo:
        return ("the official-template check has not run yet (still missing: " + "; ".join(todo) +
                "; `python -m repro.autoregembed.experiments.template_check` runs it)")
    table = template_comparison(template_scores(base, suite, tasks))
    row = _compression_row(table, "official")
    if row is None:
        return "the official-template check is stored, but its compression-only scores do not cover the same tasks"
    chosen = selections(base).set_index("template")["selected step"]
    step = int(chosen[TEMPLATE_NAMES["official"]])
    if step == 0 and int(chosen[TEMPLATE_NAMES["book"]]) == 0:
        stage2 = ("its stage 2 again dev-selected step 0, its start, as the book's did: the template leaves the "
                  "page's conclusion as it is")
    else:
        dev = dev_curves(base)
        dev = dev[dev.template == TEMPLATE_NAMES["official"]].set_index("step")["dev"]
        stage2 = (f"its stage 2 dev-selected step {step} (the book's: step {int(chosen[TEMPLATE_NAMES['book']])}), "
                  f"{dev[step] - dev[0]:+.2f} STS-B dev Spearman from its start ({dev[0]:.2f} to {dev[step]:.2f})")
        runs = official_runs(base, suite, tasks)
        test = alignment_under_official(runs)
        sts = test[test.category == "STS"] if len(test) else test
        seeds = sorted(int(s) for s in runs.loc[runs.model == converged.AUTOREG, "seed"].unique())
        if len(sts) and len(seeds) > 1:
            r = sts.iloc[0]
            steps = ", ".join(f"step {selected_step(base, seed)} at seed {seed}" for seed in seeds)
            stage2 += (f"; over its {len(seeds)} stage-2 seeds (dev selected {steps}; step 0 is stage 1 itself), "
                       f"alignment against compression only on STS: {r['difference']:+.2f}, no verdict: every seed "
                       "starts from the one stage 1, so each side is one independent run")
    return f"under the official template, compression only scores {_versus_book(row)}, and {stage2}"


def cause_findings(base: AlignConfig, suite: str = converged.FINAL_SUITE,
                   tasks: Sequence[str] = converged.TASKS) -> dict[str, str]:
    """One sentence per variant of :data:`VARIANTS`, by its short id (:data:`VARIANT_KEYS`: what the change does to
    the official template's compression only, against the book's; :data:`NOT_MEASURED` while it is not scored),
    then ``"additivity"``: whether the two causes add up (:func:`_additivity`; not measured until all three are
    scored).
    Each ends without its final period."""
    table = template_comparison(template_scores(base, suite, tasks))
    out = {}
    for name in VARIANTS:
        variant = _compression_row(table, name)
        lead = CAUSES[name][:1].upper() + CAUSES[name][1:]
        out[VARIANT_KEYS[name]] = (f"{lead}, the official template's compression only scores {_versus_book(variant)}"
                     if variant is not None else f"{lead}: {NOT_MEASURED}")
    out["additivity"] = _additivity(table) or (f"Whether the two changes add up: not measured ({NOT_MEASURED}); "
                                               "the principled template of the fair-chance runs is this one, under "
                                               "the budget rule")
    return out


# what a variant's sentence says when its stage 1 is not stored (no placeholder on a published page)
NOT_MEASURED = ("not measured: its 300-step stage 1 did not finish inside its session, and a run folder does not "
                "outlive one")


if __name__ == "__main__":
    main()
