"""Paper 3's claims, each with a verdict at our scale: the tests of the Tables, data-efficiency and ablation
pages in one place, so the pages and the summary page judge them the same way.

Every verdict comes from :func:`repro.verdicts.comparison.claim_verdict` (two-sided Wilcoxon signed-rank over the
paired units, p < 0.05, plus a paired bootstrap CI of the mean difference): supported / contradicted / not
supported (no significant difference) / untestable / missing results.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import friedmanchisquare

from repro.autoregembed.config import AlignConfig
from repro.autoregembed.experiments.ablations import COMPRESSION_ONLY, LABELS, grid_cells, grid_label
from repro.autoregembed.quoted import PAPER_ABLATIONS
from repro.core.tasks import STS7_TASKS
from repro.verdicts.comparison import claims_table
from repro.verdicts.paired_runs import paired_runs_test
from repro.verdicts.rule import claim_row, is_supported, is_tested, runs_test

FULL_VARIANT = LABELS["full"]
# the paper's statements, in its words, shared by every page that tests them (one statement, one verdict)
COMPRESSION_BEATS = "compression alone beats the untrained last token (Tables 1-2: 73.90 vs 56.91)"
ALIGNMENT = "alignment improves on compression only (Tables 1-2: 83.24 vs 73.90)"
BEATS_CONTRASTIVE = "AutoRegEmbed beats contrastive training on the same data (Tables 1-2: 83.24 vs 81.53)"
BEATS_PROMPTS = "AutoRegEmbed beats training-free prompt methods (PromptEOL; Tables 1-2)"
MEMORY = "alignment (B comparisons) is more memory-efficient than contrastive learning (B^2)"
# references the data-efficiency curve's AutoRegEmbed runs are tested against: PromptEOL is training-free (one fixed
# model: a one-sample test per size); compression only is a trained stage 1, a side with its own independent runs
# the statements the paper makes about the data-efficiency curve beyond "at every size" (Figure 1 and Figure 3's text)
PARETO = "Figure 1: AutoRegEmbed's front (training data vs STS) dominates the contrastive one"
FEW_SAMPLES = ("Figure 3: about 15k samples already beat the contrastive maximum (scale-adapted: AutoRegEmbed at "
               "the size nearest 30% of the largest against each contrastive baseline at the largest)")
CONTRIBUTIONS = "Table 3: compression contributes more than alignment (removing it costs 16.99, removing alignment 9.34)"
TOGETHER = "Appendix F: tau=0.05 with beta=0.2 together is worse than either alone"
FIXED_REFERENCES = {"compression only": ALIGNMENT, "PromptEOL": BEATS_PROMPTS}
TRAINED_REFERENCES = ("compression only",)
TABLE_ORDER = ["last token", "mean", "PromptEOL", "last token, in-batch", "last token, in-batch + hard negative",
               "mean, in-batch", "mean, in-batch + hard negative", "compression only", "AutoRegEmbed"]


def _category(wide: pd.DataFrame, category: str) -> pd.DataFrame:
    return wide.loc[category] if category in wide.index.get_level_values(0) else wide.iloc[:0].droplevel(0)


def best_contrastive(wide: pd.DataFrame) -> str | None:
    """The contrastive baseline with the highest STS average (the paper compares against its best one)."""
    sts = _category(wide, "STS")
    contrastive = [m for m in wide.columns if "in-batch" in str(m)]
    return max(contrastive, key=lambda m: sts[m].mean()) if contrastive and len(sts) else None


def headline_table(wide: pd.DataFrame) -> pd.DataFrame:
    """Methods (rows, in the paper's order) x per-task scores and the STS / retrieval averages (x100)."""
    order = [m for m in TABLE_ORDER if m in wide.columns] + [m for m in wide.columns if m not in TABLE_ORDER]
    table = wide[order].T
    table.columns = [task for _, task in table.columns]  # (category, task) -> task
    for category in ("STS", "Retrieval"):
        part = _category(wide, category)
        if len(part):
            table[f"{category} average"] = part[order].mean()
            table[f"{category} tasks"] = part[order].notna().sum()
            if category == "STS" and set(STS7_TASKS) <= set(part.index):
                table["STS average (7 SentEval sets)"] = part.loc[STS7_TASKS, order].mean()
    return table


def current_wide(wide: pd.DataFrame, rule_scores: pd.DataFrame) -> pd.DataFrame:
    """The *Tables 1-2* page's (category, task) x method frame with its trained methods (the contrastive baselines,
    compression only, AutoRegEmbed: superseded runs of a fixed length) replaced by the budget rule's, averaged over
    their seeds (``rule_scores``: :func:`repro.autoregembed.experiments.converged.final_scores`); the training-free
    methods stay (as the Tables 1-2 page scores them, where ``rule_scores`` also holds them). Unchanged while nothing
    is stored under the rule."""
    if not len(rule_scores):
        return wide
    rule = rule_scores.pivot_table(index=["category", "task"], columns="model", values="score", aggfunc="mean")
    trained = [m for m in wide.columns if "in-batch" in str(m) or m in ("compression only", "AutoRegEmbed")]
    kept = wide.drop(columns=trained)
    return kept.join(rule.drop(columns=[m for m in rule.columns if m in kept.columns]), how="left")  # one source each


def table_claims(wide: pd.DataFrame) -> pd.DataFrame:
    """Tables 1-2: compression alone beats the untrained last token; alignment improves on compression only;
    AutoRegEmbed beats the best contrastive baseline trained on the same data. STS and retrieval each."""
    claims = [(COMPRESSION_BEATS, "compression only", "last token"), (ALIGNMENT, "AutoRegEmbed", "compression only")]
    contrastive = best_contrastive(wide)
    if contrastive is not None:
        claims.append((BEATS_CONTRASTIVE, "AutoRegEmbed", contrastive))
    return claims_table(wide, [(claim, a, b, category, "better") for claim, a, b in claims
                               for category in ("STS", "Retrieval")])


def _paired_points(curve: pd.DataFrame, candidate: str, references: pd.Series | None) -> pd.DataFrame:
    paired = curve.pivot_table(index=["examples", "seed"], columns="method", values="STS average")
    if references is not None and candidate == "AutoRegEmbed":  # fixed models: the same value at every point
        paired = paired.assign(**{r: float(references[r]) for r in FIXED_REFERENCES if r in references.index})
    return paired


def data_efficiency_claims(curve: pd.DataFrame, candidate: str = "AutoRegEmbed",
                           references: pd.Series | None = None) -> pd.DataFrame:
    """Figure 3: the candidate beats each contrastive baseline at equal data, consistently at every training-set
    size. One statement per baseline, one comparison per size, each with the training runs (seeds) of that size as
    the units (:func:`repro.verdicts.rule.runs_test`): the statement holds only if every size does. With
    ``references`` holding "compression only" (one stage-1 model, one run), the paper's Table 3 claim that
    alignment improves on it, per size: a trained side with one independent run, so untestable until stage 1 has
    independent seeds; PromptEOL is training-free, one fixed model (a one-sample test). A curve with a ``unit``
    column counts the seeds of one unit (stage-2 runs from one stage 1) as one independent run. Compression only
    given as curve points instead (each independent chain's own, at every size, its unit the chain's stage 1) is a
    side of independent runs, not a baseline of Figure 3."""
    paired = _paired_points(curve, candidate, references)
    as_points = [m for m in TRAINED_REFERENCES if m in set(curve.method)]  # one per chain: runs of their own
    others = [m for m in curve.method.unique() if m != candidate and m not in as_points]
    claims = [(f"{candidate} beats {other} at equal training data, at every size (Figure 3)", other)
              for other in others]
    claims += [(statement, reference) for reference, statement in FIXED_REFERENCES.items()
               if reference in paired and reference not in others]
    units = _units(curve)
    rows = []
    for claim, other in claims:
        for size, part in paired.groupby(level="examples"):
            a = _per_unit(part[candidate], units, candidate, size)
            if other in as_points:  # each chain's own compression only, repeated at every size: the candidate's run
                # of a chain and that chain's compression only share its stage 1 (one unit, the same name): paired
                first, second = (_per_unit(part[m], units, m, size, named=True) for m in (candidate, other))
                common = first.index.intersection(second.index)
                a, b = first[common].to_numpy(), second[common].to_numpy()
                rows.append(claim_row(claim, f"{candidate} vs {other}", f"{size} triplets", "better",
                                      paired_runs_test(a, b), a, b, len(a)))
                continue
            if other in TRAINED_REFERENCES:  # the one stage 1 every point starts from: one independent run
                b, fixed = part[other].dropna().to_numpy()[:1], False
            elif other in FIXED_REFERENCES:
                b, fixed = part[other].dropna().to_numpy()[:1], True
            else:
                b, fixed = _per_unit(part[other], units, other, size), False
            rows.append(claim_row(claim, f"{candidate} vs {other}", f"{size} triplets", "better",
                                  runs_test(a, b, fixed=fixed), a, b, len(a)))
    rows += _front_rows(paired, candidate, others, units)
    return pd.DataFrame(rows)


def _front_rows(paired: pd.DataFrame, candidate: str, others: list[str], units) -> list[dict]:
    """Figure 1's dominance (at each size, the candidate against the strongest contrastive baseline there) and
    Figure 3's few-samples statement (the candidate at the size nearest 30% of the largest against each baseline
    at the largest, the paper's ~15k against 50k), runs as units as above."""
    rows = []
    sizes = sorted(paired.index.get_level_values("examples").unique())
    if candidate not in paired or not others or not sizes:
        return rows
    for size, part in paired.groupby(level="examples"):
        strongest = max(others, key=lambda m: part[m].mean() if m in part else -np.inf)
        a, b = (_per_unit(part[m], units, m, size) for m in (candidate, strongest))
        rows.append(claim_row(PARETO, f"{candidate} vs {strongest}", f"{size} triplets", "better", runs_test(a, b),
                              a, b, len(a)))
    largest, few = sizes[-1], min(sizes, key=lambda n: abs(n - 0.3 * sizes[-1]))
    if few < largest:
        a = _per_unit(paired.xs(few, level="examples")[candidate].rename_axis("seed"), units, candidate, few)
        for other in others:
            b = _per_unit(paired.xs(largest, level="examples")[other].rename_axis("seed"), units, other, largest)
            rows.append(claim_row(FEW_SAMPLES, f"{candidate} at {few} vs {other} at {largest}", "triplets", "better",
                                  runs_test(a, b), a, b, len(a)))
    return rows


def _units(curve: pd.DataFrame) -> pd.Series | None:
    """(method, examples, seed) -> the run's independent unit, where the curve names them (``unit``)."""
    if "unit" not in curve:
        return None
    return curve.set_index(["method", "examples", "seed"])["unit"]


def _per_unit(values: pd.Series, units: pd.Series | None, method: str, size, named: bool = False):
    """One value per independent run of ``method`` at ``size``: the seeds of one unit (runs that share an upstream
    model) averaged (``named``: a Series indexed by the unit, else its values)."""
    values = values.dropna()
    if units is None:
        return values.droplevel("examples") if named else values.to_numpy()
    keys = [units.get((method, size, seed), f"seed {seed}") for seed in values.index.get_level_values("seed")]
    means = values.groupby(keys, sort=False).mean()
    return means if named else means.to_numpy()


def data_efficiency_differences(curve: pd.DataFrame, candidate: str = "AutoRegEmbed",
                                references: pd.Series | None = None) -> pd.DataFrame:
    """Per training-set size: the candidate's STS average minus each other method's (and compression only's),
    mean over seeds with the smallest and largest seed's difference. Descriptive: two seeds per size are too
    few for a test at one size."""
    paired = _paired_points(curve, candidate, references)
    rows = []
    for other in [c for c in paired.columns if c != candidate]:
        diff = (paired[candidate] - paired[other]).groupby(level="examples")
        rows.append(pd.DataFrame({"versus": other, "mean difference": diff.mean(), "smallest": diff.min(),
                                  "largest": diff.max(), "seeds": diff.count()}))
    return pd.concat(rows).reset_index().set_index(["versus", "examples"]) if rows else pd.DataFrame()


# variants the paper does not test: the official code's choices where it departs from the paper's text
CODE_CHECKS = {
    "reference added (official code)": lambda v, full: (
        f"'{v}' does no better than the paper's sign (a code-vs-paper check; the paper does not test it)",
        v, full, "STS", "no gain"),
}
# the paper's statements that a variant performs about as well as the full loss (equivalence, not a loss):
# tanh ~ sigmoid (Table 3) and strategy 1 ~ the original loss (Appendix, 83.02 vs 83.07)
SIMILAR = {"tanh": "tanh performs similarly to the sigmoid (Table 3)",
           "strategy 1: q as target": "strategy 1 performs similarly to the original loss (Appendix: 83.02 vs 83.07)"}


def seed_spread(curve: pd.DataFrame) -> pd.DataFrame:
    """Training-seed noise, from the data-efficiency curve: per method, the standard deviation (ddof 1) of the STS
    average across the seeds of one configuration (size), its median and largest over sizes: the same definition
    as every other page's seed spread (:func:`repro.verdicts.seeds.seed_spread`)."""
    spread = curve.groupby(["method", "examples"])["STS average"].agg(lambda x: x.std(ddof=1) if len(x) > 1
                                                                      else float("nan"))
    table = spread.groupby(level="method").agg(["median", "max", "count"])
    return table.rename(columns={"median": "median seed spread", "max": "largest seed spread",
                                 "count": "sizes"})


def measured_spread(curve: pd.DataFrame) -> tuple[float, str]:
    """The training-seed spread measured on the data-efficiency curve, for scale beside the single-run pages
    (Tables 1-2, the ablations): the largest, over the curve's methods, of a method's median :func:`seed_spread`
    over sizes (an SD over seeds), and a sentence for the page saying why a single-run comparison gets no verdict;
    NaN and a sentence saying so when no size of any method has two seeds stored."""
    rule = ("Runs are the units of replication, so a comparison of one training run per method gets no verdict: "
            "its test over tasks is shown as descriptive only.")
    noise = seed_spread(curve).dropna(subset=["median seed spread"]) if len(curve) else pd.DataFrame()
    if noise.empty:
        return float("nan"), rule + " No data-efficiency size has two seeds stored: the seed spread is unmeasured."
    method = noise["median seed spread"].idxmax()
    row = noise.loc[method]
    seeds = curve[curve.method == method].groupby("examples")["seed"].nunique()
    others = ", ".join(f"{m} {v:.2f}" for m, v in noise["median seed spread"].items() if m != method)
    return float(row["median seed spread"]), (
        f"{rule} For scale: the SD over {seeds.max()} seeds of one training-set size on the data-efficiency curve is "
        f"{row['median seed spread']:.2f} STS points for {method} (median over {int(row['sizes'])} sizes; largest "
        f"{row['largest seed spread']:.2f}{'; the other methods: ' + others if others else ''}).")


def ablation_claim_list(models, full: str = FULL_VARIANT) -> tuple[list[tuple], list]:
    """Table 3 / appendices as ``(claim, a, b, category, expected)`` over the variant labels among ``models``, with
    each claim's quoted STS average (or None): every variant (not the temperature x beta grid) is worse than the full
    loss, except those the paper calls similar (:data:`SIMILAR`, judged by equivalence) and the code checks; and the
    two removals against each other (:data:`CONTRIBUTIONS`)."""
    models = list(models)
    grid = grid_cells(models)
    variants = [v for v in models if v != full and v not in grid]
    claims = [CODE_CHECKS[v](v, full) if v in CODE_CHECKS else (SIMILAR[v], v, full, "STS", "equal") if v in SIMILAR
              else (f"'{v}' is worse than the full loss", v, full, "STS", "worse") for v in variants]
    quoted = [PAPER_ABLATIONS.get(v) for v in variants]
    if {LABELS["no-compression"], COMPRESSION_ONLY} <= set(models):  # the two removals against each other
        claims.append((CONTRIBUTIONS, LABELS["no-compression"], COMPRESSION_ONLY, "STS", "worse"))
        quoted.append(None)
    return claims, quoted


def ablation_claims(wide: pd.DataFrame, full: str = FULL_VARIANT) -> pd.DataFrame:
    """:func:`ablation_claim_list` over ``wide``'s variant columns, tested over tasks (one run per variant), with the
    quoted STS average beside each claim."""
    claims, quoted = ablation_claim_list(wide.columns, full)
    table = claims_table(wide, claims)
    table.insert(1, "paper (quoted STS average)", quoted)
    return table


GRID_CHOICE = (AlignConfig.temperature, AlignConfig.beta)  # the paper's (the book's default) temperature and beta


def grid_claims(wide: pd.DataFrame, choice: tuple[float, float] = GRID_CHOICE) -> pd.DataFrame:
    """:func:`grid_claim_list` over ``wide``'s grid columns, tested over tasks (one run per cell)."""
    claims = grid_claim_list(wide.columns, choice)
    return claims_table(wide, claims) if claims else pd.DataFrame()


def grid_claim_list(models, choice: tuple[float, float] = GRID_CHOICE) -> list[tuple]:
    """Appendix F (Table 7) of the paper on the temperature x beta grid (models "tau=T, beta=B"), as
    ``(claim, a, b, category, expected)``:
    tau = 0.05 is the best temperature (each other tau worse, at the chosen beta), the extreme tau = 1.0 is worse
    than tau = 0.05 at every beta (the paper: by 1.6 points or more), beta = 0.05 is worse than beta = 0.1, and
    beta = 0.2 brings no gain over it (the paper: 83.04 vs 83.24; the authors keep 0.1). A cell missing from
    ``models`` gives no claim."""
    tau0, beta0 = choice
    cells = grid_cells(models)
    temperatures = sorted({t for t, _ in cells.values()})
    betas = sorted({b for _, b in cells.values()})
    # one statement each, in the paper's words; its comparisons are the cells it needs
    claims = [(f"tau={tau0} is the best temperature (Appendix F; at beta={beta0})", grid_label(t, beta0),
               grid_label(tau0, beta0), "STS", "worse") for t in temperatures if t not in (tau0, 1.0)]
    claims += [(f"the extreme tau=1.0 is worse than tau={tau0} at every beta (Appendix F: by 1.6 points or more)",
                grid_label(1.0, b), grid_label(tau0, b), "STS", "worse") for b in betas if 1.0 in temperatures]
    claims += [(f"beta={b} is worse than the paper's beta={beta0} (Appendix F; tau={tau0})", grid_label(tau0, b),
                grid_label(tau0, beta0), "STS", "worse") for b in betas if b < beta0]
    claims += [(f"beta={b} brings no gain over the paper's beta={beta0} (Appendix F: 83.04 vs 83.24; tau={tau0})",
                grid_label(tau0, b), grid_label(tau0, beta0), "STS", "no gain") for b in betas if b > beta0]
    claims += [("the results are stable elsewhere in the tau x beta grid (Appendix F)", grid_label(t, b),
                grid_label(tau0, beta0), "STS", "equal") for t in temperatures for b in betas
               if t != 1.0 and (t, b) != (tau0, beta0)]
    together = [t for t in temperatures if t != tau0 and t != 1.0]  # beta=0.2 alone: at the other usual temperature
    claims += [(TOGETHER, grid_label(tau0, 0.2), grid_label(tau0, beta0), "STS", "worse")]
    claims += [(TOGETHER, grid_label(tau0, 0.2), grid_label(min(together, key=lambda t: abs(t - 0.1)), 0.2), "STS",
                "worse")] if together else []
    return [c for c in claims if c[1] in cells and c[2] in cells]


def grid_friedman(wide: pd.DataFrame, category: str = "STS") -> dict:
    """Does the temperature x beta setting change the score at all? Friedman's test (scipy.stats) over the grid's
    cells, the ``category``'s tasks as blocks (tasks every cell has)."""

    cells = _category(wide, category)[list(grid_cells(wide.columns))].dropna()
    if cells.shape[1] < 3 or len(cells) < 2:
        return {"cells": cells.shape[1], "tasks": len(cells), "statistic": float("nan"), "p (Friedman)": float("nan")}
    statistic, p = friedmanchisquare(*(cells[c].to_numpy() for c in cells.columns))
    return {"cells": cells.shape[1], "tasks": len(cells), "statistic": float(statistic), "p (Friedman)": float(p)}


def not_reproduced(*tables: pd.DataFrame) -> pd.DataFrame:
    """The claims of ``tables`` that a test decided and that are not "supported" (contradicted, inconclusive,
    significant but below the margin); rows with no verdict (one run per method, untestable, a model against
    itself) are not listed: they neither reproduced nor failed to."""
    rows = pd.concat([t for t in tables if len(t)], ignore_index=True) if any(len(t) for t in tables) else pd.DataFrame()
    if not len(rows):
        return rows
    verdicts = rows["verdict"]
    keep = verdicts.map(is_tested) & ~verdicts.map(is_supported)
    return rows[keep][["statement", "category", "difference", "p", "verdict"]]


def memory_claim(costs: pd.DataFrame) -> dict:
    """The paper's efficiency claim (B instead of B² comparisons makes alignment memory-efficient), judged on the
    measurements of :func:`repro.autoregembed.objective_cost.objective_costs`: supported only if alignment's peak memory is
    below InfoNCE's at every batch size measured. One measurement per point: a measured comparison, not a test."""
    ratio = costs.pivot_table(index="batch_size", columns="objective", values=["peak_mb_above_model", "step_seconds"])
    memory = ratio["peak_mb_above_model"]["align"] / ratio["peak_mb_above_model"]["contrastive"]
    time = ratio["step_seconds"]["align"] / ratio["step_seconds"]["contrastive"]
    cheaper = bool((memory < 1).all())
    usable = len(memory) and np.isfinite(memory.to_numpy(dtype=float)).all() and (memory > 0).all()
    # one deterministic measurement per batch size: a measured comparison, reported apart from the tested claims
    verdict = "missing results" if not usable else "holds (measured)" if cheaper else "does not hold (measured)"
    return {"statement": MEMORY,
            "batch sizes": list(memory.index), "memory align / contrastive": [round(float(m), 2) for m in memory],
            "time align / contrastive": [round(float(t), 2) for t in time],
            "verdict": verdict}
