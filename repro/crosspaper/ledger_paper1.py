"""Paper 1's claims-ledger rows (Pooling and Attention): Figure 2's best layer against the last, Figure 1's layer
similarity, Tables 2-4 at the earlier fixed budget (history) and under the budget rule, and Table 5's second backbone;
from the stored results of the pages that show them (:mod:`repro.crosspaper.registry` names this builder)."""

from __future__ import annotations

import pandas as pd

from repro.crosspaper.ledger_schema import ABLATION, COLUMNS, HEADLINE, NOT_QUOTED, PAPERS, fmt_p, from_claims
from repro.pages.parameters import page_parameters
from repro.pooling_attention.claims import (
    BEST_LAYER_TEST,
    ROBUSTNESS_CLAIMS,
    TABLE_CLAIMS,
    best_vs_last_layer,
    layer_similarity_claims,
    present_claims,
)
from repro.pooling_attention.claims import table_claims as p1_claims
from repro.pooling_attention.converged import converged_scores
from repro.pooling_attention.layer_similarity import layer_correlation
from repro.pooling_attention.layerwise import layerwise
from repro.pooling_attention.trained import CAP, converged_config, evaluate_models
from repro.verdicts.comparison import claims_table, per_task_scores
from repro.verdicts.rule import INCONCLUSIVE, adjusted_verdict
from repro.verdicts.seeds import one_seed, seeded_claims

LAST_LAYER = "the last layer is not always the best (Figure 2)"


def _fixed_budget(params: dict) -> dict:
    """The earlier fixed-budget training settings among a Paper 1 page's parameters (p1_tables, p1_robustness)."""
    return {k: params[k] for k in ("steps", "batch_size", "max_length", "validation_sts_pairs", "validation_triplets",
                                   "seed")}


def paper1_rows(profile: str = "standard", recompute: bool = False) -> pd.DataFrame:
    """Figure 2 (the best layer against the last, over all tasks, per backbone), Tables 2-4 (the designs' claims
    on the first backbone of the Tables page, at the earlier budget and converged) and Table 5
    (:func:`table5_rows`)."""
    rows = []
    fig = page_parameters("p1_layerwise_mteb", profile)
    frames = [layerwise(b, fig["suite"], tasks=fig["tasks"], layer_step=fig["layer_step"], progress=False,
                        recompute=recompute)
              .assign(backbone=b) for b in fig["backbones"]]
    scores = pd.concat(frames, ignore_index=True)
    scores["score"] = scores["main_score"] * 100
    layers = best_vs_last_layer(scores)
    for _, r in layers[layers.category == "all tasks"].iterrows():
        difference = r["its gain"]  # the tested layer's (largest t) gain over the last: the effect the p is about
        verdict = ("untestable" if str(r["verdict"]).startswith("untestable")
                   else adjusted_verdict(INCONCLUSIVE, "better", difference, "", r["p (max over layers)"]))
        rows.append({"paper": PAPERS[1], "claim": f"{LAST_LAYER} [{r['backbone']}]", "tier": HEADLINE,
                     "scale": f"{r['backbone']}, EOS pooling, {r['tasks']} tasks, '{fig['suite']}' suite",
                     "difference": difference, "paper (quoted)": NOT_QUOTED, "test": BEST_LAYER_TEST,
                     "statistic": f"{fmt_p(r['p (max over layers)'])}, layer {r['tested layer (largest t)']} (the "
                                  f"largest t) vs the last, {r['last layer']}; the choice of the layer is inside the test",
                     "expected": "better", "p": float(r["p (max over layers)"]), "margin side": "",
                     "verdict": verdict, "page": "p1_layerwise_mteb", "current": True})
    corr = page_parameters("p1_layer_correlation", profile)
    matrices = {b: pd.DataFrame(layer_correlation(b, corr["n_sentences"], recompute=recompute)["rows"])
                for b in corr["backbones"]}
    figure1 = from_claims(1, layer_similarity_claims(matrices), f"EOS states of {corr['n_sentences']} STS-B "
                           "sentences, every layer pair", "p1_layer_correlation")
    t = page_parameters("p1_tables", profile)
    backbone = t["backbones"][0]
    train = _fixed_budget(t)
    wide = per_task_scores(evaluate_models(backbone, t["models"], t["suite"], t["tasks"], recompute, **train))
    scale = (f"{backbone}, models {t['models']}, {t['steps']} steps x {t['batch_size']} SNLI triplets (the earlier "
             f"fixed budget), seed {t['seed']}, '{t['suite']}' suite")
    parts = [pd.DataFrame(rows, columns=COLUMNS), figure1,
             from_claims(1, one_seed(p1_claims(wide)), scale, "p1_tables", current=False)]
    # the same claims under the declared budget rule, for the pairs of models with converged runs stored
    parts.append(_converged_rows(backbone, converged_scores(backbone, t["models"])[0], TABLE_CLAIMS, "compact"))
    return pd.concat(parts + table5_rows(profile, recompute), ignore_index=True)


def table5_rows(profile: str = "standard", recompute: bool = False) -> list[pd.DataFrame]:
    """Table 5's statements about a second, smaller backbone: at the earlier fixed budget (page p1_robustness's
    models, one seed; read from its stored runs, trained where missing as that page does) and on the converged
    runs of p1_converged's ``table5_backbones`` (runs as units; a statement only where both its models have runs
    stored)."""
    r = page_parameters("p1_robustness", profile)
    train = _fixed_budget(r)
    wide = per_task_scores(evaluate_models(r["backbone"], r["models"], r["suite"], r["tasks"], recompute, **train))
    earlier = one_seed(claims_table(wide, present_claims(ROBUSTNESS_CLAIMS, r["models"])))
    scale = (f"{r['backbone']}, models {r['models']}, {r['steps']} steps x {r['batch_size']} SNLI triplets (the "
             f"earlier fixed budget), seed {r['seed']}, {len(wide)} tasks, '{r['suite']}' suite")
    parts = [from_claims(1, earlier, scale, "p1_robustness", tier=ABLATION, current=False)]
    c = page_parameters("p1_converged", profile)
    for backbone in [b for b in c["backbones"] if b in c.get("table5_backbones", [])]:
        models = [m for m in c.get("backbone_models", {}).get(backbone, c["models"]) if m in c["models"]]
        tasks = c.get("backbone_tasks", {}).get(backbone)
        seeds = c.get("backbone_seeds", {}).get(backbone, c["seeds"])
        frame, _ = converged_scores(backbone, models, seeds, c["suite"], tasks)
        parts.append(_converged_rows(backbone, frame, ROBUSTNESS_CLAIMS, c["suite"], tier=ABLATION))
    return parts


def _converged_rows(backbone: str, frame: pd.DataFrame, statements, suite: str, tier: str = HEADLINE) -> pd.DataFrame:
    """``statements`` about the models with converged runs in ``frame`` (:func:`converged_scores`), judged with
    the runs as units; no row for a statement whose two models are not both stored."""
    claims = present_claims(statements, set(frame["model"]) if len(frame) else set())
    if not claims:
        return pd.DataFrame(columns=COLUMNS)
    per_model = ", ".join(f"model {int(m)}: {int(n)}" for m, n in frame.groupby("model")["seed"].nunique().items())
    example = converged_config(backbone, claims[0][1], 0)
    scale = (f"{backbone}, converged runs (budget rule, cap {CAP} x {example.batch_size}, training data "
             f"`{example.data}`), seeds per model ({per_model}), {frame['task'].nunique()} tasks, '{suite}' suite")
    return from_claims(1, seeded_claims(frame, claims), scale, "p1_converged", tier=tier)
