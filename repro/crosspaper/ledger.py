"""The claims ledger: every claim of the three papers the book tests, from each paper's claims module on the stored
results of the page that tests it (the pages' own parameters, :mod:`repro.pages.parameters`).

Two levels. A **comparison** row (:func:`claims_ledger`) is one test: a statement's two sides in one category, on
one backbone or run, with its raw p and the Benjamini-Hochberg p adjusted over every current comparison of the
ledger as one family; its verdict is decided at the adjusted p (:mod:`repro.core.verdicts`). A **statement**
(:func:`statements`) is one sentence of a paper, in its words, with one verdict from its comparisons: supported if
every comparison is, contradicted if any is, inconclusive otherwise (a statement of existence, "not always",
is supported by any one). Statements are tiered: **headline** (the abstract and main tables) and **ablation**
(ablations, hyperparameters, robustness checks); counts are per tier. Rows of superseded runs (the earlier fixed
training budget, the single-run Tables page of Paper 3) are history (:func:`history`), never counted.
Nothing here is typed: each verdict is the engine's, and a quoted number comes from the paper's ``quoted`` module
or from the claim text the claims module gives.
"""

from __future__ import annotations

import pandas as pd
from statsmodels.stats.multitest import multipletests

from repro.autoregembed.claims import ablation_claims, data_efficiency_claims, grid_claims, memory_claim
from repro.autoregembed.claims import table_claims as p3_claims
from repro.autoregembed.experiments import converged as p3_converged
from repro.autoregembed.experiments import independent as p3_independent
from repro.autoregembed.experiments import search as p3_search
from repro.autoregembed.experiments.ablations import ablation_scores
from repro.autoregembed.experiments.configs import page_configs
from repro.autoregembed.experiments.data_efficiency import data_efficiency_references, data_efficiency_scores
from repro.autoregembed.experiments.tables import method_scores
from repro.autoregembed.objective_cost import objective_costs
from repro.core.comparison import claims_table, per_task_scores, with_adjusted_p
from repro.core.seeds import one_seed, seeded_claims
from repro.core.suites import suite_caps_text
from repro.core.verdicts import INCONCLUSIVE, adjusted_verdict, is_tested
from repro.crosspaper.combinations import combination_table
from repro.crosspaper.combinations import ledger_rows as combination_rows
from repro.crosspaper.ledger_paper2 import paper2_rows
from repro.crosspaper.ledger_schema import (
    ABLATION,
    COLUMNS,
    HEADLINE,
    NOT_QUOTED,
    PAPERS,
    WILCOXON,
    fmt_p,
    from_claims,
    measured_row,
)
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

LAST_LAYER = "the last layer is not always the best (Figure 2)"
# "edge is the best" needs a significant win over every other variant: short of that, say which way it falls short
VERDICTS = {"not supported at this scale": "not supported (not significantly better than every other variant)"}


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
                     "ours": difference, "paper (quoted)": NOT_QUOTED, "test": BEST_LAYER_TEST,
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


PAPER3_PAGES = ("p3_tables", "p3_data_efficiency", "p3_ablations", "p3_memory")  # pages :func:`paper3_rows` reads


def paper3_rows(profile: str = "standard", recompute: bool = False, pages: dict[str, dict] | None = None
                ) -> pd.DataFrame:
    """Tables 1-2, data efficiency (pooled over sizes and seeds) and the ablations, as the summary page.
    ``pages``: page name -> parameters overriding the book's for that page (:data:`PAPER3_PAGES`)."""
    pages = _page_overrides(pages, profile)
    t, d, a = (page_parameters(name, profile, pages.get(name))
               for name in ("p3_tables", "p3_data_efficiency", "p3_ablations"))
    (_, base_t), (_, base_d), (_, base_a) = (page_configs(**(p | {"recompute": recompute})) for p in (t, d, a))
    wide = per_task_scores(method_scores(base_t, t["suite"], t["tasks"], t["methods"], recompute=recompute), column="method")
    curve = data_efficiency_scores(base_d, d["sizes"], d["seeds"], d["epochs"], d["methods"], d["suite"], d["tasks"],
                                   recompute=recompute)
    flat = data_efficiency_references(base_d, d["references"], d["suite"], d["tasks"], recompute=recompute)
    variants = per_task_scores(ablation_scores(base_a, a["variants"], a["temperatures"], a["betas"], a["suite"],
                                               a["tasks"], recompute=recompute), column="variant")
    held = WILCOXON + ", one training run per method: descriptive, no verdict"
    ablations = one_seed(ablation_claims(variants))
    quoted_ablation = ablations["paper (quoted STS average)"].map(
        lambda v: NOT_QUOTED if pd.isna(v) else f"{v} (STS average of the variant, quoted from the paper)")
    grid = one_seed(grid_claims(variants, (base_a.temperature, base_a.beta)))
    quoted_grid = (grid["claim (paper)"].map(lambda c: "in the claim text (quoted from the paper's Appendix F, Table 7)"
                                             if "Appendix F:" in c else NOT_QUOTED) if len(grid) else None)
    step = f"{base_t.steps} stage-2 steps x {base_t.batch_size} triplets, seed {base_t.seed}"
    m = page_parameters("p3_memory", profile, pages.get("p3_memory"))
    memory = memory_claim(objective_costs(m["batch_sizes"], m["backbone"], m["steps"], m["max_length"],
                                          recompute=recompute))
    memory_row = measured_row(
        3, memory, f"{m['backbone']}, batch sizes {memory['batch sizes']}, {m['steps']} steps each",
        "measured: alignment's peak memory below InfoNCE's at every batch size (one measurement each, no statistical "
        "test)", "memory ratio " + ", ".join(f"{r:.2f}" for r in memory["memory align / contrastive"]), "p3_memory")
    converged = paper3_converged_rows(profile)
    tables = one_seed(p3_claims(wide))
    # a statement the budget rule's runs test supersedes the single-run Tables page's rows of it
    superseded = tables["claim (paper)"].isin(set(converged["claim"].map(statement_of)))
    parts = [
        from_claims(3, tables[superseded], f"{base_t.backbone}, {step}, '{t['suite']}' suite", "p3_tables",
                     test=held, quoted="in the claim text (quoted from the paper's Tables 1-2)", current=False),
        from_claims(3, tables[~superseded], f"{base_t.backbone}, {step}, '{t['suite']}' suite", "p3_tables",
                     test=held, quoted="in the claim text (quoted from the paper's Tables 1-2)"),
        from_claims(3, data_efficiency_claims(curve, references=flat),
                     f"{base_d.backbone}, sizes {d['sizes']} x seeds {d['seeds']}, '{d['suite']}' suite",
                     "p3_data_efficiency"),
        from_claims(3, ablations, f"{base_a.backbone}, {base_a.steps} stage-2 steps per variant, seed {base_a.seed}, "
                     f"'{a['suite']}' suite", "p3_ablations", test=held, quoted=quoted_ablation, tier=ABLATION),
        from_claims(3, grid, f"{base_a.backbone}, temperature x beta grid, {base_a.steps} stage-2 steps per cell, seed "
                            f"{base_a.seed}, '{a['suite']}' suite", "p3_ablations",
                     test=held, quoted=quoted_grid, tier=ABLATION),
        converged,
        memory_row,
    ]
    return pd.concat(parts, ignore_index=True)


def paper3_converged_rows(profile: str = "standard") -> pd.DataFrame:
    """Tables 1-2's stage-2 claims under the budget rule (page ``p3_converged``), runs as units: from the independent
    chains (one stage 1 per seed, the principled template, :mod:`repro.autoregembed.experiments.independent`) once
    one is scored; the earlier runs that all start from one 300-step stage 1 are then history (superseded)."""
    c = page_parameters("p3_converged", profile)
    base = p3_search.base_config(c["backbone"])
    frame, _ = p3_converged.final_scores(base, c["seeds"], c["suite"])
    chains, _ = p3_independent.final_scores(p3_independent.SEEDS, c["backbone"], c["suite"])
    parts = [_converged_claim_rows(frame, base, c, current=chains.empty)]
    if not chains.empty:
        stored = sorted(chains[chains["model"] == p3_converged.AUTOREG]["seed"].unique())
        scale = (f"{c['backbone']}, independent chains (stage 1 under the budget rule and the principled template, "
                 f"one per seed; stored seeds {', '.join(map(str, stored))} of {len(p3_independent.SEEDS)}), each with "
                 f"its own dev-selected stage 2; the budget-rule page's best contrastive baseline, seeds "
                 f"{', '.join(map(str, sorted(chains[chains['model'] == p3_converged.BASELINE]['seed'].unique())))};"
                 f" '{c['suite']}' suite")
        claims = [x for x in p3_independent.CLAIMS if {x[1], x[2]} <= set(chains.model)]
        parts.append(from_claims(3, seeded_claims(chains, claims), scale, "p3_converged"))
    return pd.concat(parts, ignore_index=True)


def _converged_claim_rows(frame: pd.DataFrame, base, c: dict, current: bool) -> pd.DataFrame:
    """The earlier budget-rule runs' rows (every AutoRegEmbed seed from one 300-step stage 1)."""
    claims = [x for x in p3_converged.CLAIMS if {x[1], x[2]} <= set(frame.model)] if len(frame) else []
    if not claims:
        return pd.DataFrame(columns=COLUMNS)
    seeds = frame.groupby("model")["seed"].nunique()
    scale = (f"{base.backbone}, the declared search's dev-selected configurations (budget rule, cap {base.steps} x "
             f"{base.batch_size} SNLI + MEDI triplets), seeds per method ("
             + ", ".join(f"{m}: {'1 (the one stage 1)' if m == p3_converged.COMPRESSION else int(n)}"
                         for m, n in seeds.items()) + f"), '{c['suite']}' suite")
    start = p3_converged.start_selected_seeds(base, c["seeds"])
    if start:  # AutoRegEmbed is then its stage 1: a difference of 0 from compression only by construction
        scale += (f"; at AutoRegEmbed's seed{'s' if len(start) > 1 else ''} {', '.join(map(str, start))} dev "
                  "selected step 0, the stage-1 encoder")
    return from_claims(3, seeded_claims(frame, claims), scale, "p3_converged", current=current)


def _page_overrides(pages: dict[str, dict] | None, profile: str = "standard") -> dict[str, dict]:
    """``pages`` checked before anything is read: only Paper 3's pages (:data:`PAPER3_PAGES`) take other parameters
    here, and only parameters they have."""
    if pages is None:
        return {}
    if not isinstance(pages, dict):
        raise TypeError(f"pages must be a dict of page name -> parameters, got {type(pages).__name__}")
    unknown = set(pages) - set(PAPER3_PAGES)
    if unknown:
        raise ValueError(f"the ledger takes other parameters only for {', '.join(PAPER3_PAGES)}; got "
                         f"{', '.join(sorted(unknown))}")
    for name, params in pages.items():
        page_parameters(name, profile, params)  # an unknown parameter or a non-dict fails here
    return pages


def all_comparisons(profile: str = "standard", recompute: bool = False, pages: dict[str, dict] | None = None
                    ) -> pd.DataFrame:
    """Every comparison row of the three papers (:data:`COLUMNS`), current and superseded, with their verdicts
    at the raw p, read from the stored results of the pages (``recompute``: the pages' results computed again;
    ``pages``: other parameters for Paper 3's pages, :func:`paper3_rows`)."""
    pages = _page_overrides(pages, profile)
    return pd.concat([paper1_rows(profile, recompute), paper2_rows(profile, recompute),
                      paper3_rows(profile, recompute, pages), combination_rows(combination_table())],
                     ignore_index=True)


def adjusted(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with "p (BH)": Benjamini-Hochberg over every tested row as one family, and each tested verdict
    decided again at its adjusted p (:func:`repro.core.comparison.with_adjusted_p`)."""
    frame = rows.rename(columns={"verdict": "verdict at our scale", "ours": "difference"})
    # one key per test (repro.core.comparison._test_keys): the two compared sides in the claim's brackets, in either
    # order ("[STS, 5 vs 1]"), the scale and the statistic; never the claim text, which differs between the
    # statements that read one test (e.g. "a better than b" and "b no gain over a")
    frame = frame.assign(comparison=frame["claim"].map(_compared), category=frame["scale"],
                         paired=frame["statistic"], **{"p": frame["p"].astype(float)})
    out = with_adjusted_p(frame).rename(columns={"verdict at our scale": "verdict", "difference": "ours",
                                                 "p (BH-adjusted)": "p (BH)"})
    return with_holm(out.drop(columns=["comparison", "category", "paired"]))


def with_holm(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` plus "p (Holm in statement)": Holm's adjustment of the raw p over the tested comparisons of each
    statement (statsmodels ``multipletests``). A statement is contradicted only by a comparison contradicted at
    both its ledger-wide BH p and this p, and a statement of existence supported only by one supported at both
    (:func:`repro.crosspaper.statements.statements`): "contradicted if any" and "supported by any" are unions of
    tests, so they are corrected within the statement; "supported if all" (an intersection-union test) needs no
    correction."""
    out = rows.assign(**{"p (Holm in statement)": float("nan")})
    tested = out["verdict"].map(is_tested) & out["p"].notna()
    for _, part in out[tested].groupby([out["paper"], out["claim"].map(statement_of)], sort=False):
        out.loc[part.index, "p (Holm in statement)"] = multipletests(part["p"].astype(float), method="holm")[1]
    return out


def _compared(claim: str) -> str:
    """The ``a vs b`` part of a claim's bracketed comparison (``"... [STS, 5 vs 1]"`` -> ``"5 vs 1"``; empty if
    none: the claim itself, a test of its own): what the ledger's BH de-duplication keys a row's test on, beside its
    scale, statistic, p and size."""
    bracket = claim.rsplit(" [", 1)[1].rstrip("]") if claim.endswith("]") and " [" in claim else ""
    return next((part for part in reversed(bracket.split(", ")) if " vs " in part), claim)


def claims_ledger(profile: str = "standard", recompute: bool = False, pages: dict[str, dict] | None = None
                  ) -> pd.DataFrame:
    """The current comparisons of the three papers (superseded runs left out: :func:`history`), with raw and
    Benjamini-Hochberg adjusted p over the whole ledger as one family, and verdicts at the adjusted p (``pages``:
    the same ledger with other parameters for some of Paper 3's pages, :func:`paper3_rows`)."""
    rows = all_comparisons(profile, recompute, _page_overrides(pages, profile))
    return adjusted(rows[rows["current"].astype(bool)]).reset_index(drop=True)


def statement_of(claim: str) -> str:
    """The paper's statement a comparison row tests: its claim without the bracketed comparison."""
    return claim.split(" [")[0]


def describe_scales(profile: str = "standard") -> str:
    """The suites the ledger's pages use, with their caps (one line each)."""
    suites = sorted({page_parameters(n, profile)["suite"] for n in ("p1_layerwise_mteb", "p1_tables",
                                                                    "p2_main_table", "p3_tables")})
    return "; ".join(f"'{s}': {suite_caps_text(s)}" for s in suites)


def scale_legend(rows: pd.DataFrame, prefix: str = "S", column: str = "scale",
                 keep: tuple = ()) -> tuple[pd.DataFrame, list[str]]:
    """A paper's rows with each distinct value of ``column`` (its scale; or its test, prefix ``T``; or the paper's
    quoted number, ``Q``) replaced by a short id (``S1``, ``S2``... in order of first appearance), and the legend
    lines (``"S1: <scale>"``): a value shared by many rows is stated once. Values in ``keep`` stay as they are."""
    values = [v for v in dict.fromkeys(rows[column]) if v not in keep]
    ids = {value: f"{prefix}{i + 1}" for i, value in enumerate(values)}
    return rows.assign(**{column: rows[column].map(lambda v: ids.get(v, v))}), [f"{i}: {v}" for v, i in ids.items()]


def paper_view(rows: pd.DataFrame) -> pd.DataFrame:
    """A paper's rows as the page shows them: indexed by (statement, comparison), each statement's rows together in
    order of its first appearance, so that rendered with a sparse index the page states each statement once, over
    its rows. A row's claim is the statement it tests followed by what the row compares in brackets (``"model 5 is
    good on STS [STS, 5 vs 1]"``; empty when the scale alone tells rows apart). A paper number the book does not
    quote shows as "-", and the column goes when the book quotes none of the paper's numbers."""
    parts = rows["claim"].str.extract(r"^(?P<statement>.*?)(?: \[(?P<comparison>[^\[\]]*)\])?$")
    order = {statement: i for i, statement in enumerate(dict.fromkeys(parts["statement"]))}
    frame = rows.drop(columns="claim").assign(statement=parts["statement"], comparison=parts["comparison"].fillna(""))
    quoted = frame["paper (quoted)"].ne(NOT_QUOTED)
    frame = frame.assign(**{"paper (quoted)": frame["paper (quoted)"].where(quoted, "-")}) if quoted.any() \
        else frame.drop(columns="paper (quoted)")
    frame = frame.iloc[frame["statement"].map(order).argsort(kind="stable")]
    return frame.set_index(["statement", "comparison"])
