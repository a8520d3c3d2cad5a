"""The three templates' stage 1 on a backbone whose tokenizer has a real document start (gemma3-270m).

On SmolLM2 the literal official template scores far below the book's (:mod:`.template_check`), and part of the gap
goes with its BOS: the official code puts the tokenizer's BOS in front of every input, and SmolLM2's BOS is its
chat-turn token ``<|im_start|>``. Gemma3's tokenizer adds a real ``<bos>`` (document start) itself, so there the
literal official form and the principled one (:data:`~.independent.PRINCIPLED`) start alike. One stage 1 per
template on gemma3-270m, under the fair-chance runs' budget rule (:func:`~.independent.stage1_config`: constant
learning rate after warm-up, stopped and selected on the held-out reconstruction loss, the same cap), each scored
as compression only on the budget-rule page's tasks, says whether SmolLM2's gap is the chat token: if the templates
are close on gemma3, it was.

* **book**: the book's earlier template (a straight quote, BOS only where the tokenizer adds one, the training newline
  kept at inference, head and tail kept);
* **official**: the official code's form, literally (BOS always, a right cut);
* **principled**: the official form with the two adaptations the fair-chance runs use.

One training per template (seed 0): the paired tests over tasks say how these encoders differ, not how the
templates would differ over retrainings, so the check carries no ledger verdict. ``python -m
repro.autoregembed.experiments.backbone_templates`` trains and scores (resumable); the pages read the store.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import pandas as pd

from repro.autoregembed.config import CompressConfig
from repro.autoregembed.experiments import converged, independent
from repro.autoregembed.experiments.scores import SCORES_EXPERIMENT, evaluate_autoreg, score_identity
from repro.autoregembed.experiments.template_check import against_over_tasks
from repro.core.scoring import stored_per_task
from repro.training.budget_curves import task_frame
from repro.verdicts.rule import MARGIN

BACKBONE = "gemma3-270m"
SEED = 0
FORMS = {"book": {"template": "book"},
         "official": {"template": "official"},  # its own cut (right) and BOS (always), as template_check
         "principled": dict(independent.PRINCIPLED)}
NAMES = {"book": "book template", "official": "official template, literal",
         "principled": "principled template (official, head and tail kept, the tokenizer's own BOS)"}
REFERENCE = "principled"  # what the other two are set against: the fair-chance runs' template
COMMAND = "python -m repro.autoregembed.experiments.backbone_templates"


def configs(backbone: str = BACKBONE, seed: int = SEED) -> dict[str, CompressConfig]:
    """Template -> its stage 1 under the fair-chance runs' budget rule on ``backbone``."""
    return {form: independent.stage1_config(seed, backbone, template=settings) for form, settings in FORMS.items()}


def run(backbone: str = BACKBONE, seed: int = SEED, suite: str = converged.FINAL_SUITE,
        tasks: Sequence[str] = converged.TASKS, progress: bool = True) -> list[str]:
    """Train (or resume) each template's stage 1 and score it as compression only; returns what is still missing."""
    for config in configs(backbone, seed).values():
        evaluate_autoreg(config, suite, tasks, converged.EVAL_MAX_LENGTH, progress)
    return missing(backbone, seed, suite, tasks)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default=BACKBONE)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    todo = run(args.backbone, args.seed)
    print("\n".join(["still missing:", *todo]) if todo else "complete")


# ----- read from the result store only (the pages) -----

def _records(config: CompressConfig, suite: str, tasks: Sequence[str]) -> dict:
    return stored_per_task(SCORES_EXPERIMENT, score_identity(config, converged.EVAL_MAX_LENGTH), suite, tasks)


def missing(backbone: str = BACKBONE, seed: int = SEED, suite: str = converged.FINAL_SUITE,
            tasks: Sequence[str] = converged.TASKS) -> list[str]:
    """The templates whose stage 1 is not stored or not scored on every task (empty: complete)."""
    return [f"{NAMES[form]} on {backbone}" for form, config in configs(backbone, seed).items()
            if converged.run_record(config) is None or len(_records(config, suite, tasks)) < len(tasks)]


def scores(backbone: str = BACKBONE, seed: int = SEED, suite: str = converged.FINAL_SUITE,
           tasks: Sequence[str] = converged.TASKS) -> pd.DataFrame:
    """Per-task compression-only scores (template, task, category, score x100) of every template scored on all
    ``tasks``."""
    frames = [task_frame(records, template=NAMES[form]) for form, config in configs(backbone, seed).items()
              for records in [_records(config, suite, tasks)] if len(records) == len(tasks)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["template", "task", "category", "score"])


def stage1_table(backbone: str = BACKBONE, seed: int = SEED) -> pd.DataFrame:
    """Per stored template: where its stage 1 stopped, the step it selected and the held-out reconstruction loss at
    its start and there."""
    rows = []
    for form, config in configs(backbone, seed).items():
        record = converged.run_record(config)
        if record is None:
            continue
        summary = record["summary"]
        loss = {r["step"]: r["validation_loss"] for r in record["rows"] if r.get("validation_loss") is not None}
        rows.append({"template": NAMES[form], "stopped at": summary["steps"],
                     "selected step": summary["selected_step"], "held-out loss at 0": loss.get(0),
                     "held-out loss selected": loss.get(summary["selected_step"])})
    return pd.DataFrame(rows, columns=["template", "stopped at", "selected step", "held-out loss at 0",
                                       "held-out loss selected"])


def comparison(frame: pd.DataFrame) -> pd.DataFrame:
    """Per other template and category (STS, retrieval, all tasks): that template minus the principled one, with
    the paired tests over tasks (:func:`~.template_check.against_over_tasks`, as the SmolLM2 check)."""
    wide = frame.pivot_table(index=["task", "category"], columns="template", values="score").reset_index()
    reference = NAMES[REFERENCE]
    return pd.DataFrame([row for form in FORMS if form != REFERENCE and NAMES[form] in wide and reference in wide
                         for row in against_over_tasks(wide, NAMES[form], reference, "principled")])


def finding(backbone: str = BACKBONE, seed: int = SEED, suite: str = converged.FINAL_SUITE,
            tasks: Sequence[str] = converged.TASKS) -> str:
    """The check's answer in one sentence (without its final period)."""
    todo = missing(backbone, seed, suite, tasks)
    if todo:
        return (f"the template check on {backbone} has not run yet (still missing: {'; '.join(todo)}; `{COMMAND}` "
                "runs it, one stage 1 per template under the budget rule)")
    table = comparison(scores(backbone, seed, suite, tasks))
    overall = table[table.tasks == "all"].set_index("template")
    parts = [f"the {name} {row['− principled']:+.2f} ({row['this template']:.2f}; no difference within "
             f"±{MARGIN:g}: {row['no difference?']})" for name, row in overall.iterrows()]
    return (f"on {backbone}, whose tokenizer adds a real <bos>, compression only under the principled template "
            f"scores {overall['principled'].iloc[0]:.2f} over the page's {int(overall['n'].iloc[0])} tasks, "
            f"against it {' and '.join(parts)}: one stage 1 per template, so no ledger verdict")


if __name__ == "__main__":
    main()
