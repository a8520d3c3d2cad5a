"""Paper 3's claims-ledger rows (AutoRegEmbed): Tables 1-2 (single runs, superseded where the budget rule's runs
test a statement), data efficiency, the ablations and the temperature x beta grid, the budget rule's and the
independent chains' runs, and the memory measurement; from the stored results of the pages that show them
(:mod:`repro.crosspaper.registry` names this builder)."""

from __future__ import annotations

import pandas as pd

from repro.autoregembed.claims import ablation_claims, data_efficiency_claims, grid_claims, memory_claim
from repro.autoregembed.claims import table_claims as p3_claims
from repro.autoregembed.experiments import chain_ablations, chain_efficiency
from repro.autoregembed.experiments import converged as p3_converged
from repro.autoregembed.experiments import independent as p3_independent
from repro.autoregembed.experiments import search as p3_search
from repro.autoregembed.experiments.ablations import ablation_scores
from repro.autoregembed.experiments.configs import page_configs
from repro.autoregembed.experiments.data_efficiency import data_efficiency_references, data_efficiency_scores
from repro.autoregembed.experiments.tables import method_scores
from repro.autoregembed.objective_cost import objective_costs
from repro.autoregembed.quoted import PAPER_ABLATIONS
from repro.crosspaper.ledger_schema import (
    ABLATION,
    COLUMNS,
    NOT_QUOTED,
    WILCOXON,
    from_claims,
    measured_row,
    statement_of,
)
from repro.crosspaper.registry import page_overrides
from repro.pages.parameters import page_parameters
from repro.verdicts.comparison import per_task_scores
from repro.verdicts.seeds import one_seed, seeded_claims


def paper3_rows(profile: str = "standard", recompute: bool = False, pages: dict[str, dict] | None = None
                ) -> pd.DataFrame:
    """Tables 1-2, data efficiency (pooled over sizes and seeds) and the ablations, as the summary page.
    ``pages``: page name -> parameters overriding the book's for that page (the registry's ``ledger_pages``)."""
    pages = page_overrides(pages, profile)
    t, d, a = (page_parameters(name, profile, pages.get(name))
               for name in ("p3_tables", "p3_data_efficiency", "p3_ablations"))
    (_, base_t), (_, base_d), (_, base_a) = (page_configs(**(p | {"recompute": recompute})) for p in (t, d, a))
    wide = per_task_scores(method_scores(base_t, t["suite"], t["tasks"], t["methods"], recompute=recompute), column="method")
    curve = data_efficiency_scores(base_d, d["sizes"], d["seeds"], d["epochs"], d["methods"], d["suite"], d["tasks"],
                                   recompute=recompute)
    flat = data_efficiency_references(base_d, d["references"], d["suite"], d["tasks"], recompute=recompute)
    efficiency = data_efficiency_claims(curve, references=flat)
    # Figure 3 on the independent chains, once complete: a statement it tests supersedes the shared-stage-1 rows
    chain_efficiency_claims = chain_efficiency.tested(base_d, d["sizes"], d["epochs"], d["methods"], flat,
                                                      suite=d["suite"], tasks=d["tasks"])
    held_de = efficiency["statement"].isin(set(chain_efficiency_claims["statement"]) if chain_efficiency_claims
                                           is not None else set())
    variants = per_task_scores(ablation_scores(base_a, a["variants"], a["temperatures"], a["betas"], a["suite"],
                                               a["tasks"], recompute=recompute), column="variant")
    held = WILCOXON + ", one training run per method: descriptive, no verdict"
    ablations = one_seed(ablation_claims(variants))
    quoted_ablation = ablations["paper (quoted STS average)"].map(_quoted_average)
    grid = one_seed(grid_claims(variants, (base_a.temperature, base_a.beta)))
    quoted_grid = (grid["statement"].map(lambda c: "in the claim text (quoted from the paper's Appendix F, Table 7)"
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
    chains = paper3_chain_ablation_rows(a["backbone"])
    # a statement the chains' ablations test supersedes its one-run rows (history); the others stay current
    by_chains = set(chains["claim"].map(statement_of))
    held_ab = ablations["statement"].isin(by_chains) if len(ablations) else pd.Series(dtype=bool)
    held_grid = grid["statement"].isin(by_chains) if len(grid) else pd.Series(dtype=bool)
    scale_ab = f"{base_a.backbone}, {base_a.steps} stage-2 steps per variant, seed {base_a.seed}, '{a['suite']}' suite"
    scale_grid = (f"{base_a.backbone}, temperature x beta grid, {base_a.steps} stage-2 steps per cell, seed "
                  f"{base_a.seed}, '{a['suite']}' suite")
    tables = one_seed(p3_claims(wide))
    # a statement the budget rule's runs test supersedes the single-run Tables page's rows of it
    superseded = tables["statement"].isin(set(converged["claim"].map(statement_of)))
    parts = [
        from_claims(3, tables[superseded], f"{base_t.backbone}, {step}, '{t['suite']}' suite", "p3_tables",
                     test=held, quoted="in the claim text (quoted from the paper's Tables 1-2)", current=False),
        from_claims(3, tables[~superseded], f"{base_t.backbone}, {step}, '{t['suite']}' suite", "p3_tables",
                     test=held, quoted="in the claim text (quoted from the paper's Tables 1-2)"),
        *(from_claims(3, efficiency[mask], f"{base_d.backbone}, sizes {d['sizes']} x seeds {d['seeds']}, "
                      f"'{d['suite']}' suite", "p3_data_efficiency", current=current)
          for mask, current in ((held_de, False), (~held_de, True)) if len(efficiency)),
        *((from_claims(3, chain_efficiency_claims, f"{base_d.backbone}, sizes {d['sizes']} x the independent chains "
                       f"(one stage 1 per seed), '{d['suite']}' suite", "p3_data_efficiency"),)
          if chain_efficiency_claims is not None else ()),
        *(from_claims(3, ablations[mask], scale_ab, "p3_ablations", test=held, quoted=quoted_ablation[mask],
                      tier=ABLATION, current=current) for mask, current in ((held_ab, False), (~held_ab, True))
          if len(ablations)),
        *(from_claims(3, grid[mask], scale_grid, "p3_ablations", test=held, quoted=quoted_grid[mask], tier=ABLATION,
                      current=current) for mask, current in ((held_grid, False), (~held_grid, True)) if len(grid)),
        chains,
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
                 f" the untrained backbone's last token and PromptEOL (training-free, one fixed value each);"
                 f" '{c['suite']}' suite")
        claims = [x for x in p3_independent.CLAIMS if {x[1], x[2]} <= set(chains.model)]
        parts.append(from_claims(3, seeded_claims(chains, claims, paired=p3_independent.PAIRED), scale,
                                 "p3_converged"))
    return pd.concat(parts, ignore_index=True)


def _quoted_average(value) -> str:
    return NOT_QUOTED if pd.isna(value) else f"{value} (STS average of the variant, quoted from the paper)"


def paper3_chain_ablation_rows(backbone: str = "smollm2-135m") -> pd.DataFrame:
    """The ablation statements on the independent chains (page ``p3_ablations``), runs as units: once a chain's
    ablation run is stored (before that, no rows); each statement's verdict needs 3 chains a side."""
    table = chain_ablations.tested(p3_independent.SEEDS, backbone)
    if table is None:
        return pd.DataFrame(columns=COLUMNS)
    seeds = ", ".join(map(str, table.attrs["seeds"]))  # the chains it read (the store read once)
    scale = (f"{backbone}, the independent chains' ablations (each a stage 2 under the budget rule from its chain's "
             f"own stage 1, principled template; chains {seeds} of {len(p3_independent.SEEDS)}), "
             f"'{p3_converged.FINAL_SUITE}' suite")
    variant = table["comparison"].str.split(" vs ").str[0]  # the paper quotes each variant's STS average
    quoted = variant.map(lambda v: _quoted_average(PAPER_ABLATIONS.get(v)))
    quoted = quoted.where(~table["statement"].str.contains("Appendix F:"),
                          "in the claim text (quoted from the paper's Appendix F, Table 7)")
    return from_claims(3, table, scale, "p3_ablations", tier=ABLATION, quoted=quoted)


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
