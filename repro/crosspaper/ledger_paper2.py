"""Paper 2's rows of the claims ledger (:mod:`repro.crosspaper.ledger`): the main table, the filter-type ablation, the
vocabulary lens and the storage cost, each from the stored results of the page that tests it (the pages' own
parameters, :mod:`repro.pages.parameters`); a page's earlier scope (the piece-wise tokenization on the STS sets) gives
history rows, never counted."""

from __future__ import annotations

import pandas as pd

from repro.core.backbones import LazyBackbone
from repro.core.stats import UNSETTLED
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
from repro.embedfilter.claims import (
    best_variant_tests,
    frequency_claims,
    mechanism_claims,
    storage_claim,
    tests_against,
)
from repro.embedfilter.filters import sweep_variants
from repro.embedfilter.quoted import PAPER_ABLATION, PAPER_MAIN
from repro.embedfilter.quoted import PAPER_SOURCE as P2_SOURCE
from repro.embedfilter.search_cost import search_cost
from repro.embedfilter.sweep import grid_runs, stored_scores, sweep_scores
from repro.embedfilter.vocab_lens import removed_band_alignment, vocabulary_probe
from repro.pages.parameters import page_parameters
from repro.verdicts.comparison import DISAGREE, claims_table
from repro.verdicts.rule import INCONCLUSIVE, adjusted_verdict, statement_verdict


def _quoted_gain(prompt: str, variant: str, sign: int = 1) -> str:
    """The paper's own gain of ``variant`` over raw for ``prompt``, per backbone it reports (quoted); ``sign=-1``:
    raw minus ``variant``, the direction of a comparison that puts raw first."""
    table = pd.DataFrame(PAPER_MAIN, columns=["backbone", "prompt", "variant", "score"])
    table = table[table.prompt.str.lower() == prompt.lower()].pivot_table(index="backbone", columns="variant",
                                                                          values="score")
    if variant not in table or "raw" not in table:
        return NOT_QUOTED
    gains = (sign * (table[variant] - table["raw"])).dropna()
    label = f"raw - {variant}" if sign < 0 else f"{variant} - raw"
    name = next(p for p in pd.DataFrame(PAPER_MAIN)[1] if p.lower() == prompt.lower())  # the paper's spelling
    return f"{name}: " + "; ".join(f"{b}: {g:+.2f}" for b, g in gains.items()) + f" ({label}; {P2_SOURCE})"


def _page_sweep(params: dict, recompute: bool, loaded: dict) -> tuple[pd.DataFrame, list[str]]:
    """The EmbedFilter sweep scores a Paper 2 page reads, and its variants; loaded once per grid (``loaded``)."""
    runs = grid_runs(params["backbones"], params["prompts"], params.get("skip_runs", []))
    variants = sweep_variants(params["ratios"])
    tokenization, protocol = params.get("tokenization", "pieces"), params.get("protocol", "mteb")
    key = (tuple(runs), params["suite"], tuple(params["tasks"] or ()), tuple(variants), tokenization, protocol)
    if key not in loaded:
        loaded[key] = sweep_scores(runs, params["suite"], params["tasks"], variants, recompute,
                                   tokenization=tokenization, protocol=protocol)
    return loaded[key], variants


def _scopes(params: dict) -> list[tuple[dict, bool]]:
    """A Paper 2 page's current scope and, if it asks for one, its earlier scope (every run of the grid on
    ``earlier_tasks`` under ``earlier_tokenization``: history, never counted)."""
    scopes = [(params, True)]
    if params.get("earlier_tasks"):
        scopes.append((params | {"tokenization": params["earlier_tokenization"], "tasks": params["earlier_tasks"],
                                 "skip_runs": []}, False))
    return scopes


EDGE_IMPROVES = "EmbedFilter (edge, ratio 2) improves on the raw embedding, across backbones and prompts"
EDGE_PER_CATEGORY = "the edge/2 gain over raw holds in every task category"
EDGE_BEST = "edge is the best ratio-2 filter (against the other filters and the baselines)"
KEPT = "quality is kept at ratios 4 and 8 (raw is not better than edge/4 or edge/8 by the margin)"


def _p2_row(claim: str, r, scale: str, quoted: str, page: str, tier: str, current: bool = True) -> dict:
    """One Paper 2 comparison (a :func:`repro.embedfilter.claims.tests_against` row: deterministic, tasks as
    units) in the ledger's columns; the verdict is the engine's on the row's Wilcoxon p."""
    test = str(r["verdict"])
    difference = float(r["mean difference"])
    verdict = (DISAGREE if test == UNSETTLED else "untestable" if test.startswith("untestable")
               else adjusted_verdict(INCONCLUSIVE, "better", difference, "", r["p (Wilcoxon)"]))
    return {"paper": PAPERS[2], "claim": claim, "tier": tier, "scale": scale, "difference": round(difference, 2),
            "paper (quoted)": quoted, "test": WILCOXON,
            "statistic": f"{fmt_p(r['p (Wilcoxon)'])}, {r['wins']} wins / {r['losses']} losses", "expected": "better",
            "p": float(r["p (Wilcoxon)"]), "margin side": "", "verdict": verdict, "page": page, "current": current,
            "margin": float("nan")}


def _p2_scale(b: str, p: str, tasks: int, params: dict) -> str:
    protocol = ", the official scoring protocol" if params.get("protocol", "mteb") == "official" else ""
    return (f"{b}, {p}, {tasks} tasks, '{params['suite']}' suite, {params.get('tokenization', 'pieces')} "
            f"tokenization{protocol}")


def main_table_rows(main: dict, current: bool = True, recompute: bool = False, loaded: dict | None = None
                    ) -> pd.DataFrame:
    """The main table's comparisons for one scope (a p2_main_table parameter set): edge/2 against raw per backbone x
    prompt over every task and per category, and edge/4 and edge/8 not worse than raw by the margin."""
    rows, loaded = [], {} if loaded is None else loaded
    scores, _ = _page_sweep(main, recompute, loaded)
    for _, r in tests_against(scores, ["edge/2"], "raw").iterrows():
        rows.append(_p2_row(f"{EDGE_IMPROVES} [{r['backbone']}, {r['prompt']}]", r,
                            _p2_scale(r["backbone"], r["prompt"], r["tasks"], main),
                            _quoted_gain(r["prompt"], "edge/2"), "p2_main_table", HEADLINE, current))
    per_task = scores.groupby(["backbone", "prompt", "category", "task", "variant"], as_index=False)["main_score"].mean()
    kept = [(KEPT, "raw", f"edge/{r}", None, "no gain") for r in (4, 8) if f"edge/{r}" in set(per_task["variant"])]
    for (b, p), part in per_task.groupby(["backbone", "prompt"]):
        wide = part.pivot_table(index=["category", "task"], columns="variant", values="main_score") * 100
        categories = sorted(set(part["category"]))
        gains = [(EDGE_PER_CATEGORY, "edge/2", "raw", c, "better") for c in categories
                 if len(categories) > 1 and {"edge/2", "raw"} <= set(wide)]
        for claims, quoted in ((gains, NOT_QUOTED), (kept, _quoted_gain(p, "edge/8", sign=-1))):  # raw first
            table = claims_table(wide, claims) if claims else pd.DataFrame()
            if len(table):
                table = table.assign(comparison=[f"{b}, {p}, {c}" for c in table["comparison"]])
                rows += from_claims(2, table, _p2_scale(b, p, len(wide), main), "p2_main_table", quoted=quoted,
                                    tier=ABLATION if claims is gains else HEADLINE, current=current).to_dict("records")
    return pd.DataFrame(rows, columns=COLUMNS)


def edge_task_differences(profile: str = "standard", recompute: bool = False) -> pd.DataFrame:
    """Per backbone x prompt x task of the main table's current scope: edge/2 minus raw (x100), the per-task
    differences Paper 2's Wilcoxon tests read (their spread calibrates that test, :mod:`repro.verdicts.calibration`)."""
    scores, _ = _page_sweep(page_parameters("p2_main_table", profile), recompute, {})
    per_task = scores.groupby(["backbone", "prompt", "task", "variant"])["main_score"].mean().unstack("variant")
    return ((per_task["edge/2"] - per_task["raw"]) * 100).rename("difference").dropna().reset_index()


def filter_type_rows(types: dict, current: bool = True, recompute: bool = False, loaded: dict | None = None
                     ) -> pd.DataFrame:
    """The filter-type ablation's comparisons for one scope (a p2_filter_types parameter set): edge/2 against every
    other ratio-2 filter and baseline, per backbone x prompt."""
    others = {k: v for k, v in PAPER_ABLATION.items() if k != "edge/2"}
    runner_up = max(others, key=others.get)
    quoted = (f"edge/2 {PAPER_ABLATION['edge/2']} vs the next best {runner_up} {others[runner_up]} (Qwen2.5-0.5B, "
              f"PromptEOL, ablation subset; {P2_SOURCE})")
    scores, variants = _page_sweep(types, recompute, {} if loaded is None else loaded)
    tests, _ = best_variant_tests(scores, "edge/2", ["raw"] + [v for v in variants if v.endswith("/2")])
    return pd.DataFrame([_p2_row(f"{EDGE_BEST} [{r['backbone']}, {r['prompt']}, vs {r['against']}]", r,
                                 _p2_scale(r["backbone"], r["prompt"], r["tasks"], types), quoted, "p2_filter_types",
                                 ABLATION, current) for _, r in tests.iterrows()], columns=COLUMNS)


def paper2_rows(profile: str = "standard", recompute: bool = False, pages: dict[str, dict] | None = None
                ) -> pd.DataFrame:
    """Every Paper 2 comparison: the main table's and the filter-type ablation's, each page's current scope and
    its earlier one (history), then the vocabulary lens and the storage cost (:func:`lens_rows`). ``pages``: other
    parameters for the two sweep pages (the template check, :mod:`repro.crosspaper.template_sensitivity`)."""
    pages = pages or {}
    loaded: dict = {}  # the pages share a grid: its sweeps are read once
    parts = [main_table_rows(main, current, recompute, loaded)
             for main, current in _scopes(page_parameters("p2_main_table", profile, pages.get("p2_main_table")))]
    parts += [filter_type_rows(types, current, recompute, loaded)
              for types, current in _scopes(page_parameters("p2_filter_types", profile, pages.get("p2_filter_types")))]
    return pd.concat([*parts, lens_rows(profile, recompute)], ignore_index=True)


def lens_rows(profile: str = "standard", recompute: bool = False) -> pd.DataFrame:
    """The vocabulary-space diagnosis (p2_vocab_probe: three tests per backbone) and the storage and search cost
    (p2_dimension_cost: measured, no statistical test)."""
    probe = page_parameters("p2_vocab_probe", profile)
    probes = {b: vocabulary_probe(b, probe["prompt"], n_sentences=probe["n_sentences"],
                                  n_resamples=probe["n_resamples"], recompute=recompute,
                                  tokenization=probe["tokenization"]) for b in probe["backbones"]}
    claims = frequency_claims(probes)
    claims = claims.assign(comparison=claims["category"] + ", " + claims["comparison"], category=None)
    rows = from_claims(2, claims, f"{probe['n_sentences']} STS-B test sentences, {probe['prompt']} "
                        f"({probe['tokenization']} tokenization), edge/2", "p2_vocab_probe",
                        quoted="the paper shows it in examples and figures; no number is tested there")
    bands = mechanism_claims({b: removed_band_alignment(b, probe["prompt"], n_sentences=probe["n_sentences"],
                                                        recompute=recompute, tokenization=probe["tokenization"])
                              for b in probe["backbones"]})
    bands = bands.assign(comparison=bands["category"] + ", " + bands["comparison"], category=None)
    rows = pd.concat([rows, from_claims(
        2, bands, f"the mean of {probe['n_sentences']} STS-B test sentences' embeddings, {probe['prompt']} "
        f"({probe['tokenization']} tokenization), the band edge/2 removes against 1,000 random bands of its size",
        "p2_vocab_probe", quoted="the paper's title and analysis; no number is tested there")], ignore_index=True)
    cost = page_parameters("p2_dimension_cost", profile)
    widths = sorted({LazyBackbone(b).hidden_size for b in cost["backbones"]})
    claim = storage_claim({w: search_cost(w, cost["ratios"], recompute=recompute) for w in widths})
    speedup = claim[f"search speed-up at ratio {claim['ratios'][-1]}"]
    storage = measured_row(
        2, claim, f"widths {claim['widths']}, ratios {claim['ratios']}, seeded random unit vectors",
        "measured: the index size falls at every ratio step and exact search at the largest ratio is faster than at "
        "full width, at every width and corpus size (one median timing per point, no statistical test)",
        f"search speed-up at ratio {claim['ratios'][-1]}: " + ", ".join(f"{x:.2f}x" for x in speedup),
        "p2_dimension_cost")
    return pd.concat([rows, storage], ignore_index=True)


def scope_verdicts(profile: str = "standard", recompute: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """How the tokenization, the task mix and the scoring protocol each move Paper 2's main-table and filter-type
    verdicts: the statements' verdicts (at the raw p of each comparison, one scope at a time) on the runs of the
    current grid, from the earlier scope (piece-wise tokenization, the STS sets, mteb's scoring) one change at a
    time to the current one, and then under the official protocol where it is stored for every run. Returns the
    table (statement x scope) and the runs it covers; a scope whose results are not all stored is left out."""
    main = page_parameters("p2_main_table", profile)
    runs = grid_runs(main["backbones"], main["prompts"], main.get("skip_runs", []))
    base = main | {"skip_runs": main.get("skip_runs", [])}
    scopes = {"pieces, STS sets (earlier)": base | {"tokenization": main.get("earlier_tokenization", "pieces"),
                                                    "tasks": main.get("earlier_tasks") or None},
              "official, STS sets": base | {"tasks": main.get("earlier_tasks") or None},
              "official, every task (current)": base}
    official = stored_scores(main["suite"], "official", main.get("tokenization", "pieces"))
    scored = set(zip(official["backbone"], official["prompt"])) if len(official) else set()
    if runs and set(runs) <= scored:
        scopes["official, every task, official protocol"] = base | {"protocol": "official"}
    if not main.get("earlier_tasks"):
        scopes = {k: v for k, v in scopes.items() if "STS sets" not in k}
    loaded: dict = {}
    columns = {}
    for name, params in scopes.items():
        rows = pd.concat([main_table_rows(params, True, recompute, loaded),
                          filter_type_rows(params, True, recompute, loaded)], ignore_index=True)
        if rows.empty:
            continue
        statement = rows["claim"].str.split(" [", regex=False).str[0]
        columns[name] = rows.groupby(statement, sort=False)["verdict"].apply(statement_verdict)
    return pd.DataFrame(columns).rename_axis("statement").reset_index(), [f"{b}:{p}" for b, p in runs]
