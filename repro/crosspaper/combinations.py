"""Combinations none of the three papers tried, each a paired comparison of two recipes on the same tasks.

* "Does EmbedFilter's training-free gain survive training?": EmbedFilter edge/2 applied to Paper 1's trained
  models 1 and 5 (the shipped weights of one seed, :mod:`repro.recipes.shipped`), against the same weights without
  the filter; next to it, the same filter on the untrained PromptEOL and Echo states (Paper 2's own setting).
* "Does it survive AutoRegEmbed's training?": the same filter on Paper 3's trained encoder (seed 0 of the
  dev-selected configuration under the budget rule once that search is complete, before it the Tables 1-2
  configuration's stage-2 run; the basis is the SVD of that encoder's own, fine-tuned ``lm_head.weight``), against
  the same encoder's embeddings, both on all 19 tasks from one set of weights (the run is not kept between sessions,
  so both sides are computed in the session that trains it: ``python -m repro.crosspaper.combinations --autoregembed``).
* "PromptEOL or no prompt as model 1's input format?": Paper 1's model 1 trained and scored with PromptEOL's
  template (``repro train --converged --model 1 --prompt prompteol``) against the same design trained without a
  prompt, on the seeds both have (a verdict about the training recipe, so the training runs are its units).

Both sides of a trained pair are scored by :func:`repro.recipes.recipes.evaluate_recipe` on all 19 tasks at ``compact``
caps from the same (shipped) weights (stored in ``results/recipe_scores``; a trained model's embeddings are cached, so
its filtered variant never re-encodes); the untrained pairs read the EmbedFilter sweeps' scores.
:func:`combination_table` reads the stored scores only and tests each pair with the Wilcoxon signed-rank test over
tasks (two-sided, p < 0.05): a verdict about these weights (one training seed), not about the training recipe.

    python -m repro.crosspaper.combinations            # computes the missing scores (about 20 min per trained model)
    python -m repro.crosspaper.combinations --autoregembed   # also AutoRegEmbed's pair, from its local stage-2 run
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

from repro.autoregembed.experiments import converged as p3_converged
from repro.autoregembed.experiments.cli import command_for
from repro.autoregembed.experiments.scores import SCORES_EXPERIMENT as AUTOREG_SCORES
from repro.autoregembed.experiments.scores import autoreg_embedder_from, score_identity
from repro.autoregembed.train import run_spec
from repro.core.embedder import CachedEmbedder, MappedEmbedder
from repro.core.encode import EncodeConfig
from repro.core.scoring import evaluate_per_task, records_frame, stored_per_task
from repro.core.stats import UNSETTLED, wilcoxon_over_tasks
from repro.core.tasks import TASKS
from repro.crosspaper.leaderboard import paper2_tokenization
from repro.crosspaper.leaderboard_paper3 import paper3_configs
from repro.crosspaper.ledger_schema import COLUMNS, NOT_QUOTED, fmt_p
from repro.embedfilter.filters import filters_for, parse_variant
from repro.pooling_attention.converged import SEEDS, converged_scores
from repro.recipes.recipe import TRAINED_RECIPES, parse_recipe
from repro.recipes.recipes import evaluate_recipe, evaluated_scores, recipe_scores, sweep_command
from repro.store.identity import config_identity
from repro.verdicts.rule import (
    FIRST_BETTER,
    INCONCLUSIVE,
    MARGIN,
    MISSING,
    RUNS_TEST,
    SECOND_BETTER,
    SIGNIFICANT,
    TASKS_TEST,
    adjusted_verdict,
    decide,
)
from repro.verdicts.run_units import run_comparison
from repro.verdicts.seeds import ONE_RUN_PREFIX

SUITE = "compact"
# (question, base recipe, combined recipe); the first two are the combinations, the last two their reference
PAIRS = [
    ("EmbedFilter edge/2 on trained Paper 1 model 1", "smollm2-135m/p1-model1", "smollm2-135m/p1-model1+edge/2"),
    ("EmbedFilter edge/2 on trained Paper 1 model 5", "smollm2-135m/p1-model5", "smollm2-135m/p1-model5+edge/2"),
    ("EmbedFilter edge/2 on untrained PromptEOL (Paper 2)", "smollm2-135m/prompteol", "smollm2-135m/prompteol+edge/2"),
    ("EmbedFilter edge/2 on untrained Echo (Paper 2)", "smollm2-135m/echo", "smollm2-135m/echo+edge/2"),
]


def pair_scores(recipe: str, suite: str = SUITE) -> pd.DataFrame:
    """A recipe's per-task scores for a pair: a trained recipe's from ``repro evaluate --recipe`` only (both sides
    from the same weights), a training-free recipe's from the EmbedFilter sweeps under the tokenization of Paper 2's
    pages (so its gain is the one those pages report)."""
    if parse_recipe(recipe)[1] in TRAINED_RECIPES:
        return evaluated_scores(recipe, suite)
    return recipe_scores(recipe, suite, tokenization=paper2_tokenization())[0]


DELTA = "difference, "  # prefix of the per-category difference columns (combined minus base, x100)
PROMPT_MODEL, PROMPT = 1, "prompteol"  # the input-format combination: Paper 1's model 1 trained with PromptEOL
PROMPT_QUESTION = "PromptEOL vs no prompt as trained Paper 1 model 1's input format"


def _compared(row: dict, base: pd.DataFrame, combined: pd.DataFrame, helps: str, hurts: str) -> dict:
    """``row`` completed with the tasks both frames have, their means, and the Wilcoxon test over tasks."""
    both = base.merge(combined, on=["task", "category"], suffixes=("_base", "_combined"))
    row |= {"tasks": len(both), "base mean": both["score_base"].mean() if len(both) else np.nan,
            "combined mean": both["score_combined"].mean() if len(both) else np.nan,
            "difference": np.nan, "p (Wilcoxon)": np.nan}
    if len(both) == len(TASKS):
        by = (both["score_combined"] - both["score_base"]).groupby(both["category"]).mean()
        row |= {f"{DELTA}{category}": difference for category, difference in by.items()}
        test = wilcoxon_over_tasks(both["score_combined"], both["score_base"])
        verdict = {SIGNIFICANT + FIRST_BETTER: helps, SIGNIFICANT + SECOND_BETTER: hurts,
                   UNSETTLED: UNSETTLED}.get(test["verdict"], "no significant difference")
        if verdict in (helps, hurts) and abs(test["mean_difference"]) < MARGIN:  # as the ledger's engine says it
            verdict += f", by less than the {MARGIN:g}-point margin"
        row |= {"difference": test["mean_difference"], "p (Wilcoxon)": test["p"], "verdict": verdict}
    return row


def prompt_row(backbone: str = "smollm2-135m", suite: str = SUITE, seeds=SEEDS) -> dict:
    """Model 1 trained with PromptEOL vs without a prompt on the seeds both have: the per-task means over those
    seeds for the table, and the verdict with the training runs as units (:func:`repro.verdicts.run_units.run_comparison`,
    Welch on per-run means; one run a side gives no verdict)."""
    plain, _ = converged_scores(backbone, [PROMPT_MODEL], seeds, suite)
    prompted, _ = converged_scores(backbone, [PROMPT_MODEL], seeds, suite, prompt=PROMPT)
    shared = sorted(set(plain.seed) & set(prompted.seed)) if len(plain) and len(prompted) else []
    label = f"{backbone}/p1-model{PROMPT_MODEL} trained, seed{'s' if len(shared) > 1 else ''} " + (
        ", ".join(map(str, shared)) or "none stored")
    row = {"question": PROMPT_QUESTION, "kind": "input format", "base": f"{label}, no prompt",
           "combined": f"{label}, {PROMPT}"}
    if not shared:
        seed = next(iter(sorted(set(plain.seed))), 1)
        return _compared(row, plain.iloc[:0], prompted.iloc[:0], "", "") | {
            "verdict": f"not computed: python -m repro.pooling_attention.trained --converged --backbone {backbone} "
                       f"--model {PROMPT_MODEL} --seed {seed} --prompt {PROMPT} --suite {suite}"}

    def averaged(frame):
        return frame[frame.seed.isin(shared)].groupby(["task", "category"], as_index=False)["score"].mean()

    row = _compared(row, averaged(plain), averaged(prompted), "PromptEOL helps", "PromptEOL hurts")
    # a question about the training recipe: the runs are the units (Welch on per-run means over every task)
    runs = pd.concat([plain[plain.seed.isin(shared)].assign(model="plain"),
                      prompted[prompted.seed.isin(shared)].assign(model=PROMPT)])
    test = run_comparison(runs, PROMPT, "plain")
    verdict = decide(test, "better")
    row |= {"p (runs)": test.get("p (difference)", np.nan), "units": test["units"],
            "verdict": {"supported": "PromptEOL helps", "contradicted": "PromptEOL hurts",
                        "inconclusive": "no significant difference (runs as units)"}.get(verdict, verdict)}
    return row


AUTOREG_QUESTION = "EmbedFilter edge/2 on trained AutoRegEmbed's encoder (Paper 3)"
AUTOREG_FILTER = "edge/2"
EVAL_MAX_LENGTH = 512


def autoreg_config(backbone: str = "smollm2-135m"):
    """The AutoRegEmbed encoder the combination filters: seed 0 of the dev-selected configuration under the budget
    rule (page ``p3_converged``) once AutoRegEmbed's search is complete, else the stage-2 configuration of the
    book's Paper 3 Tables 1-2 page (the leaderboard's AutoRegEmbed row)."""
    selected = p3_converged.selected_configs(p3_converged.base_config(backbone))[p3_converged.AUTOREG]
    return p3_converged.at_seed(selected, 0) if selected is not None else paper3_configs(backbone)[1]


def autoreg_source(config) -> str:
    """Which run the combination's AutoRegEmbed encoder is, for the row's label."""
    if config.stopping == "dev":
        start = (", dev selected step 0: the stage-1 encoder it started from"
                 if p3_converged.selects_start(config) else "")
        return (f"budget rule, dev-selected lr {config.lr:g}, {config.finetune}, {config.divergence}, "
                f"seed {config.seed}{start}")
    return "Paper 3 Tables 1-2 run"


def autoreg_identity(config, variant: str | None = None, suite: str = SUITE) -> dict:
    """The stored scores' key of AutoRegEmbed's encoder (the Paper 3 pages' key), and of its filtered variant. A
    run that dev-selected step 0 saved the stage-1 weights it started from: its scores are compression only's
    (:func:`repro.autoregembed.experiments.converged.compression_identity`), never recomputed under its own key."""
    if config.stopping == "dev" and p3_converged.selects_start(config):
        identity = p3_converged.compression_identity(config.compress, p3_converged.start_digest(config), suite,
                                                     list(TASKS))
    else:
        identity = score_identity(config, EVAL_MAX_LENGTH)
    return identity if variant is None else identity | {"filter": variant}


def autoreg_pair(backbone: str = "smollm2-135m", suite: str = SUITE) -> tuple[pd.DataFrame, pd.DataFrame]:
    """AutoRegEmbed's stored per-task scores without and with the filter (task, category, score x100, weights:
    the digest of the weights each was computed from; read only)."""
    config = autoreg_config(backbone)
    frames = []
    for variant in (None, AUTOREG_FILTER):
        found = stored_per_task(AUTOREG_SCORES, autoreg_identity(config, variant, suite), suite, list(TASKS))
        frame = records_frame(AUTOREG_QUESTION, found)[["task", "category", "score"]]
        frames.append(frame.assign(weights=[found[t].get("weights_sha256") for t in frame["task"]]))
    return frames[0], frames[1]


def autoreg_row(backbone: str = "smollm2-135m", suite: str = SUITE) -> dict:
    """The AutoRegEmbed pair's row: both sides on every task and from one set of weights, or what computes it."""
    base, filtered = autoreg_pair(backbone, suite)
    source = autoreg_source(autoreg_config(backbone))
    row = _compared({"question": AUTOREG_QUESTION, "kind": "trained (Paper 3)", "base": f"{backbone} AutoRegEmbed ({source})",
                     "combined": f"{backbone} AutoRegEmbed+{AUTOREG_FILTER}"},
                    base.drop(columns="weights"), filtered.drop(columns="weights"),
                    "the filter helps", "the filter hurts")
    weights = set(base["weights"]) | set(filtered["weights"])
    if row["tasks"] < len(TASKS) or len(weights) > 1:
        why = "missing tasks" if row["tasks"] < len(TASKS) else "the two sides come from different weights"
        row |= {"difference": np.nan, "p (Wilcoxon)": np.nan,
                "verdict": f"not computed ({why}): python -m repro.crosspaper.combinations --autoregembed --suite {suite} "
                           "(in the session that trains the Paper 3 run)"}
    return row


def evaluate_autoreg_filter(backbone: str = "smollm2-135m", suite: str = SUITE, variant: str = AUTOREG_FILTER,
                            progress: bool = True, config=None, tasks=None) -> pd.DataFrame:
    """Scores AutoRegEmbed's encoder with and without the filter on every task (or ``tasks``), from the stage-2
    run of ``config`` (default: the Tables 1-2 page's) on this machine (trains nothing: a missing run is an error
    naming the command that trains it). The unfiltered side is cached on disk, so the filtered one never
    re-encodes; a stored unfiltered task from other weights is recomputed from these."""
    if parse_variant(variant)[0] == "whiten":
        raise ValueError(f"{variant}: whitening is fitted on untrained states; use a linear filter (edge/2, ...)")
    config = autoreg_config(backbone) if config is None else config
    tasks = list(TASKS) if tasks is None else list(tasks)
    spec = run_spec(config, progress)
    if not spec.weights_here:
        command = ("scripts/p3_converged.sh" if config.stopping == "dev" else
                   command_for(config, suite))
        raise FileNotFoundError(f"AutoRegEmbed's stage-2 run {spec.folder.name} is not on this machine; train and "
                                f"score it first: {command}")
    state = {}

    def base():
        if "base" not in state:
            inner = autoreg_embedder_from(spec.folder / "final", EVAL_MAX_LENGTH)
            state["base"] = CachedEmbedder(inner, json.dumps([config_identity(config), EVAL_MAX_LENGTH,
                                                              inner.digest]))
        return state["base"], state["base"].digest

    def filtered():
        embedder, digest = base()
        encode = EncodeConfig(prompt="none-noeos", poolings=("mean",), max_length=EVAL_MAX_LENGTH)
        transform = filters_for(embedder.model.backbone, encode, [variant])[variant]
        return MappedEmbedder(embedder, transform, variant), digest

    frames = [evaluate_per_task(AUTOREG_SCORES, autoreg_identity(config, None, suite), suite, tasks, base, progress,
                                label="AutoRegEmbed", recompute_stale=True),
              evaluate_per_task(AUTOREG_SCORES, autoreg_identity(config, variant, suite), suite, tasks, filtered,
                                progress, label=f"AutoRegEmbed+{variant}", recompute_stale=True)]
    return pd.concat(frames, ignore_index=True)


def combination_table(suite: str = SUITE, backbone: str = "smollm2-135m") -> pd.DataFrame:
    """One row per pair: tasks scored by both, the two means (x100), the mean difference, the Wilcoxon test over
    tasks and its verdict; pairs with a missing side say which command computes it (read only)."""
    rows = []
    for question, base, combined in PAIRS:
        a, b = pair_scores(base, suite), pair_scores(combined, suite)
        trained = parse_recipe(base)[1] in TRAINED_RECIPES
        kind = "trained (Paper 1)" if trained else "untrained"
        note = "" if trained else f" ({paper2_tokenization()} tokenization)"
        row = _compared({"question": question, "kind": kind, "base": base + note, "combined": combined + note}, a, b,
                        "the filter helps", "the filter hurts")
        if row["tasks"] < len(TASKS):
            missing = [r for r, f in ((base, a), (combined, b)) if len(f) < len(TASKS)]
            row["verdict"] = "not computed: " + "; ".join(dict.fromkeys(
                f"repro evaluate --recipe {r} --suite {suite}" if trained else
                sweep_command(r, suite, paper2_tokenization()) for r in missing))
        rows.append(row)
    rows += [autoreg_row(backbone, suite), prompt_row(backbone, suite)]
    return pd.DataFrame(rows)


BOOK = "The book's own combinations (claimed by no paper)"
SURVIVES = "EmbedFilter's training-free gain (edge/2) survives training"


def ledger_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The trained rows of :func:`combination_table` as claims-ledger rows of the book's own (:data:`BOOK`, tier
    "book"): the filter on trained weights is one set of weights per trained model, so its test over tasks is
    descriptive ("one run per method, no verdict"); the input-format question has its runs as units."""
    rows = []
    for _, r in table[table["kind"] != "untrained"].iterrows():
        prompt = r["kind"] == "input format"
        difference, p = r["difference"], r.get("p (runs)", np.nan) if prompt else r.get("p (Wilcoxon)", np.nan)
        if str(r["verdict"]).startswith("not computed") or pd.isna(difference):
            verdict = MISSING
        elif prompt:
            verdict = r["verdict"] if str(r["verdict"]).startswith("untestable") else adjusted_verdict(
                INCONCLUSIVE, "better", difference, "", p)
        else:
            verdict = f"{ONE_RUN_PREFIX} (over tasks: {adjusted_verdict(INCONCLUSIVE, 'better', difference, '', p)})"
        rows.append({"paper": BOOK, "claim": PROMPT_QUESTION if prompt else
                     f"{SURVIVES} [{r['question'].split(' on ', 1)[1]}]", "tier": "book",
                     "scale": f"{r['combined']} vs {r['base']}, {r['tasks']} tasks, '{SUITE}' suite",
                     "difference": round(float(difference), 2) if pd.notna(difference) else "",
                     "paper (quoted)": NOT_QUOTED, "test": RUNS_TEST if prompt else TASKS_TEST,
                     "statistic": fmt_p(p), "expected": "better",
                     "p": float(p) if pd.notna(p) else float("nan"), "margin side": "", "verdict": verdict,
                     "page": "leaderboard", "current": True, "margin": float("nan")})
    return pd.DataFrame(rows, columns=COLUMNS)


def _p(p: float) -> str:
    return fmt_p(p)


def _filter_parts(table: pd.DataFrame):
    """:func:`combination_table`'s filter pairs: the untrained ones, the trained ones scored, those not yet."""
    filtered = table[table.kind != "input format"]
    untrained, trained = filtered[filtered.kind == "untrained"], filtered[filtered.kind != "untrained"]
    return untrained, trained.dropna(subset=["difference"]), trained[trained["difference"].isna()]


def filter_outcome(table: pd.DataFrame) -> str:
    """The short answer on the trained weights (from :func:`combination_table`): how many of the trained models the
    filter helps and hurts; "" while a pair is not scored."""
    untrained, scored, pending = _filter_parts(table)
    if untrained["difference"].isna().any() or scored.empty:
        return ""
    helped = int(scored.verdict.str.startswith("the filter helps").sum())
    hurt = int(scored.verdict.str.startswith("the filter hurts").sum())
    unsettled = int((scored.verdict == UNSETTLED).sum())
    rest = len(scored) - helped - hurt - unsettled
    models = f"{len(scored)} trained model{'s' if len(scored) > 1 else ''} scored"
    share = (f"all {models}" if len(scored) > 1 else f"the {models}") if helped == len(scored) else (
        f"{helped or 'none'} of the {models}")
    slight = int(scored.verdict.str.endswith("margin").sum())
    return (f"the filter helps {share}" + (f" and hurts {hurt}" if hurt else "")
            + (f" ({slight} of these by less than the {MARGIN:g}-point margin)" if slight else "")
            + (f"; on {unsettled} the test's ranks and mean disagree (unsettled)" if unsettled else "")
            + (f"; on {rest} the test finds no significant difference, which does not show that there is none"
               if rest else "") + (f" ({len(pending)} more not scored yet)" if len(pending) else ""))


def filter_summary(table: pd.DataFrame) -> str:
    """The filter on trained weights in full (from :func:`combination_table`): every pair's difference and test,
    then :func:`filter_outcome`; a trained pair not scored yet is named, not counted."""
    untrained, scored, pending = _filter_parts(table)
    outcome = filter_outcome(table)
    if not outcome:
        return "Not every EmbedFilter pair is scored yet (the table names what computes the rest)."

    def listed(part):
        return "; on ".join(f"{r['question'].split(' on ')[1]}: {r['difference']:+.2f} ({_p(r['p (Wilcoxon)'])}, "
                            f"{r['verdict']})" for _, r in part.iterrows())

    later = (f" Not scored yet: {', '.join(q.split(' on ')[1] for q in pending.question)}." if len(pending) else "")
    return (f"EmbedFilter edge/2 minus the same embedding without it, mean over {int(scored.tasks.min())} tasks: "
            f"on {listed(untrained)}; on {listed(scored)}. On these weights (one training run per model), "
            f"{outcome}: a finding about these weights, not a verdict about training (the ledger gives it none).{later}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", default=SUITE)
    parser.add_argument("--autoregembed", action="store_true",
                        help="also score AutoRegEmbed's encoder with and without the filter (its stage-2 run must "
                             "be on this machine)")
    args = parser.parse_args(argv)
    for _, base, combined in PAIRS:
        for recipe in (base, combined):
            if len(pair_scores(recipe, args.suite)) < len(TASKS):
                evaluate_recipe(recipe, args.suite)
    if args.autoregembed:
        try:
            evaluate_autoreg_filter(suite=args.suite)
        except FileNotFoundError as error:
            raise SystemExit(f"repro.crosspaper.combinations: {error}") from None
    print(combination_table(args.suite).round(3).to_string())


if __name__ == "__main__":
    main()
