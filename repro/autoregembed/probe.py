"""What stage 2 changed, as the frozen decoder sees it: on held-out triplets (never trained on), the summed
log-probabilities AutoRegEmbed's loss compares, for the model stage 2 starts from (stage 1) and the one it ends
with.

* a = log p(d+ | e_q): the positive given the query's embedding;
* c = log p(d+ | e_d+): the positive given its own embedding (S1 asks a to match it: |a - c| small);
* b = log p(d- | e_q): the hard negative given the query's embedding (S2 asks a - b to grow);
* log p(d- | e_d+): the negative given the positive's embedding (strategy 3's extra term).

If |a - c| is already small and a - b barely moves, the loss has little to teach the encoder; if a - b grows
while STS falls, the model learns to tell entailment from contradiction in the decoder's view without that
making its embeddings better for similarity.
"""

from __future__ import annotations

import pandas as pd

from repro.autoregembed.config import AlignConfig
from repro.autoregembed.data import split_align
from repro.autoregembed.model import TextIds
from repro.autoregembed.objectives import reference_scores
from repro.autoregembed.train import run_params, run_spec
from repro.core.stats import paired_bootstrap_mean, wilcoxon_over_tasks
from repro.store.fingerprint import weights_digest
from repro.store.results import load_or_compute
from repro.store.runs import train_or_load
from repro.verdicts.rule import FIRST_BETTER, SECOND_BETTER

PROBE_EXPERIMENT = "autoreg_probe"
TERMS = {("p", "q"): "log p(d+|e_q)", ("n", "q"): "log p(d-|e_q)", ("p", "p"): "log p(d+|e_d+)",
         ("n", "p"): "log p(d-|e_d+)"}


def alignment_terms(model, config: AlignConfig, rows: list[dict]) -> pd.DataFrame:
    """Per triplet of ``rows``: the four summed log-probabilities of :data:`TERMS` under ``model`` (the same
    prompts, instruction and truncation as stage 2's loss; strategy 3 computes all four)."""
    texts = TextIds.of(model.backbone.tokenizer, config)
    scores = reference_scores(model, texts, rows, AlignConfig(**(vars(config) | {"strategy": 3})))
    return pd.DataFrame({label: scores[term].numpy() for term, label in TERMS.items()})


def quantities(terms: pd.DataFrame) -> pd.DataFrame:
    """Per triplet: the quantities the loss acts on (nats, summed over target tokens)."""
    a, b, c = terms["log p(d+|e_q)"], terms["log p(d-|e_q)"], terms["log p(d+|e_d+)"]
    return pd.DataFrame({"log p(d+|e_q)": a, "log p(d+|e_d+)": c, "|a - c| (S1's distance)": (a - c).abs(),
                         "a - b (S2's margin, no reference)": a - b, "a > b": (a > b).astype(float)})


def _stored_terms(config: AlignConfig, examples: int | None, recompute: bool) -> tuple[dict, dict]:
    """{model label: per-triplet terms} and the stored record (computed and stored if missing)."""
    if not isinstance(config, AlignConfig) or config.compress is None:
        raise ValueError("the probe compares a stage-2 run with the stage 1 it started from: "
                         "give an AlignConfig with a compress stage")
    if examples is not None and (isinstance(examples, bool) or not isinstance(examples, int) or examples < 1):
        raise ValueError(f"examples must be a positive integer or None, got {examples!r}")
    _, held = split_align(config)
    rows = held[:examples] if examples is not None else held
    params = run_params(config) | {"examples": len(rows)}

    def compute():
        terms, digests = {}, {}
        for label, stage in ((BEFORE, config.compress), (AFTER, config)):
            model, _ = train_or_load(run_spec(stage, progress=False))
            digests[label] = weights_digest(model)
            terms[label] = alignment_terms(model, config, rows).round(4).to_dict(orient="list")
            del model
        summary = [{"model": label, **quantities(pd.DataFrame(t)).mean().to_dict()} for label, t in terms.items()]
        return pd.DataFrame(summary), {}, {"weights_sha256": digests, "terms": terms}

    record = load_or_compute(PROBE_EXPERIMENT, params, compute, recompute)
    return {label: pd.DataFrame(t) for label, t in record["terms"].items()}, record


BEFORE, AFTER = "before stage 2 (stage 1)", "after stage 2"


def alignment_probe(config: AlignConfig, examples: int | None = None, recompute: bool = False) -> pd.DataFrame:
    """For the run's first ``examples`` held-out triplets (None: all of them), the mean of each of
    :func:`quantities` for the stage-1 model (before stage 2) and the trained one (after), and the change
    with its test: two-sided Wilcoxon signed-rank over triplets and a paired bootstrap CI of the mean change.
    Stored (per triplet, with both models' weight digests); the weights are needed only when not stored."""
    terms, _ = _stored_terms(config, examples, recompute)
    before, after = quantities(terms[BEFORE]), quantities(terms[AFTER])
    rows = []
    for name in before.columns:
        test = wilcoxon_over_tasks(after[name], before[name], unit="triplets")
        boot = paired_bootstrap_mean(after[name], before[name])
        rows.append({"quantity": name, BEFORE: before[name].mean(), AFTER: after[name].mean(),
                     "change": test["mean_difference"], "p (Wilcoxon)": test["p"],
                     "95% CI (bootstrap)": f"[{boot['ci_low']:.3f}, {boot['ci_high']:.3f}]",
                     "test": test["verdict"].replace(FIRST_BETTER, "increased in stage 2")
                     .replace(SECOND_BETTER, "decreased in stage 2"),
                     "triplets": len(before)})
    return pd.DataFrame(rows).set_index("quantity")
