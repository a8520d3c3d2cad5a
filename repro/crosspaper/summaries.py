"""The claims ledger's reproducibility summaries, one per paper, in the usual shape of reproducibility reports:
scope, what reproduced (counted from the ledger), what was hard, and the scale.

Nothing numeric is typed here. Our scale comes from the pages' parameters (:mod:`repro.pages.parameters`) and the
declared budget rule's constants; the paper's scale comes from the ``paper`` profile
(:mod:`repro.pages.paper_profile`), which was read from each paper's official code (cited there in ``SOURCES``),
and is labelled as quoted with that source.
"""

from __future__ import annotations

import pandas as pd

from repro.autoregembed.experiments.search import BATCH as P3_BATCH
from repro.autoregembed.experiments.search import CAP as P3_CAP
from repro.autoregembed.experiments.tables import page_tasks as p3_page_tasks
from repro.core.tasks import TASKS
from repro.crosspaper.registry import REGISTRY
from repro.embedfilter.claims import tokenization_comparison
from repro.embedfilter.quoted import PAPER_DATASETS
from repro.embedfilter.sweep import stored_scores
from repro.pages import paper_profile
from repro.pages.parameters import page_parameters
from repro.pooling_attention.converged import converged_scores
from repro.pooling_attention.trained import converged_config


def _tasks(params: dict) -> list[str]:
    """The tasks a page scores: its own list, or every offline task of its suite."""
    return list(params["tasks"]) if params.get("tasks") else list(TASKS)


def _per_category(tasks: list[str]) -> str:
    """``"1 to 9"``: the fewest and most tasks of one category among ``tasks`` (offline tasks only)."""
    counts = pd.Series([TASKS[t].category for t in tasks if t in TASKS]).value_counts()
    return f"{counts.min()} to {counts.max()}"


def _datasets(tasks: list[str]) -> int:
    """MTEB datasets in a task list, CQADupstack's subforums counted once (as MTEB's benchmarks count it)."""
    return len({"CQADupstack" if t.startswith("CQADupstack") else t for t in tasks})


def _sizes(backbones: list[str]) -> str:
    """The paper's backbones with their parameter counts (from the models' cards, quoted in the profile)."""
    return ", ".join(f"{b.split('/')[-1]} ({paper_profile.PARAMETERS[b] / 1e9:.1f}B)" for b in backbones)


def _run_spread(conv: dict) -> str:
    """Per design on the first backbone: its stored converged runs and the SD over them of a run's mean score."""
    backbone = conv["backbones"][0]
    frame, _ = converged_scores(backbone, conv["models"], conv["seeds"], conv["suite"])
    if frame.empty:
        return f"no converged run of {backbone} is stored yet"
    means = frame.groupby(["model", "seed"])["score"].mean().groupby("model")
    runs, sd = means.size(), means.std().dropna()  # one run has no SD
    count = f"{runs.min()}" if runs.min() == runs.max() else f"{runs.min()} to {runs.max()}"
    noun = "run" if runs.max() == 1 else "runs"
    return (f"{count} {noun} per design on {backbone}" + ("; the SD over them of a run's mean score: "
            + ", ".join(f"{sd[m]:.1f} for model {m}" for m in sd.index) if len(sd) else ""))


def _tokenization_effect(main: dict) -> str:
    """How far the book's earlier tokenization (``main``: the main-table page's parameters) moved each run's mean
    raw score against the current one, from the stored sweeps."""
    _, tests = tokenization_comparison(stored_scores(main["suite"], tokenization=main["earlier_tokenization"]),
                                       stored_scores(main["suite"], tokenization=main["tokenization"]))
    raw = tests[tests["variant"] == "raw"] if len(tests) else tests
    if raw.empty:
        return "the book's earlier runs tokenized it piece by piece (no run is stored both ways yet)"
    low, high = raw["official - pieces"].min(), raw["official - pieces"].max()
    return (f"moving to it from the book's earlier piece-wise tokenization changed a run's mean raw score by "
            f"{low:+.2f} to {high:+.2f} points ({len(raw)} runs, on the tasks each has both ways)")


def scope_and_scale(paper: int, profile: str = "standard") -> dict[str, str]:
    """The summary's facts for a registered ``paper``: ``scope``, ``hard`` and ``scale`` (ours against the
    paper's, the latter quoted with its source), from the paper's own function (the registry's ``facts``)."""
    if paper not in REGISTRY:
        raise ValueError(f"unknown paper {paper!r}; valid: {', '.join(map(str, sorted(REGISTRY)))}")
    return REGISTRY[paper].summary_facts(profile)


def _source(paper: int) -> str:
    return f"quoted from the official code, {paper_profile.SOURCES[str(paper)].split(':')[0]}"


def paper1_facts(profile: str = "standard") -> dict[str, str]:
    """Paper 1's summary facts (:func:`scope_and_scale`)."""
    source = _source(1)
    fig, tables = page_parameters("p1_layerwise_mteb", profile), page_parameters("p1_tables", profile)
    conv, paper_tables = page_parameters("p1_converged", profile), paper_profile.PAPER["p1_tables"]
    rule = converged_config(conv["backbones"][0])
    per_step = rule.batch_size * rule.accumulation  # examples per optimizer step
    fewer = "".join(f" ({b}: {len(t)})" for b, t in conv.get("backbone_tasks", {}).items()
                    if b in conv["backbones"] and len(t) != len(_tasks(tables)))
    return {
        "scope": f"Figure 1 (layer correlation), Figure 2 (every layer scored on {len(_tasks(fig))} tasks), the "
                 "five designs trained on the same data (Tables 2-5), tested with the training runs as units.",
        "hard": "the designs' ranking at the earlier fixed budget was mostly training speed (the converged runs "
                "under the declared budget rule replace it, seed by seed); the trainable heads vary a lot from "
                f"run to run ({_run_spread(conv)}), so most differences between designs are not resolved; "
                f"per-category claims rest on {_per_category(_tasks(tables))} tasks a category, which the runs "
                "make testable.",
        "scale": f"ours: {', '.join(conv['backbones'])}, LoRA on CPU, at most {rule.steps} steps x {per_step} "
                 f"examples ({rule.steps * per_step:,}), {len(_tasks(tables))} tasks{fewer} at "
                 f"'{tables['suite']}' caps; the paper: {_sizes(paper_profile.P1_TRAINED)}, "
                 f"{paper_tables['steps']:,} steps x "
                 f"{paper_tables['batch_size'] * paper_tables.get('accumulation', 1):,} examples, "
                 f"{len(paper_profile.P1_TASKS)} MTEB tasks ({source}).",
    }


def paper2_facts(profile: str = "standard") -> dict[str, str]:
    """Paper 2's summary facts (:func:`scope_and_scale`)."""
    source = _source(2)
    main, paper_main = page_parameters("p2_main_table", profile), paper_profile.PAPER["p2_main_table"]
    grid = [r for r in (f"{b}:{p}" for b in main["backbones"] for p in main["prompts"])
            if r not in main.get("skip_runs", [])]
    pending = " (the rest are computing)" if len(grid) < len(main["backbones"]) * len(main["prompts"]) else ""
    return {
        "scope": "the main table (the edge filter at ratios "
                 f"{', '.join(str(r) for r in main['ratios'])} on PromptEOL and Echo), the filter-type "
                 "ablation, the vocabulary-space frequency diagnosis, the spectrum, and the storage and search "
                 "cost.",
        "hard": "nothing is trained, but the tokenization matters: the official scripts tokenize PromptEOL's "
                f"filled template in one call; {_tokenization_effect(main)}; the paper's own numbers "
                "are quoted from secondary summaries.",
        "scale": f"ours: {len(grid)} of the {len(main['backbones']) * len(main['prompts'])} backbone x prompt "
                 f"runs ({', '.join(grid)}) under the {main.get('tokenization', 'pieces')} tokenization on "
                 f"{len(_tasks(main))} tasks at '{main['suite']}' caps{pending}; the paper: "
                 f"{_sizes(paper_main['backbones'])}, {_datasets(paper_main['tasks'])} MTEB datasets in its "
                 f"official code's task list, which the paper profile runs ({source}); its main table averages "
                 f"{PAPER_DATASETS} of them (quoted).",
    }


def paper3_facts(profile: str = "standard") -> dict[str, str]:
    """Paper 3's summary facts (:func:`scope_and_scale`)."""
    source = _source(3)
    tables, paper_tables = page_parameters("p3_tables", profile), paper_profile.PAPER["p3_tables"]
    return {
        "scope": "Tables 1-2 against the untrained backbone, PromptEOL and contrastive baselines on the same "
                 "triplets, data efficiency, the loss ablations and the temperature x beta grid, and the "
                 "declared dev search under the budget rule.",
        "hard": "stage 2 lowers the dev signal from its first steps at the paper's learning rate; the page "
                "*Paper 3 under the budget rule* gives the declared dev search (learning rate, LoRA, JS "
                "divergence) and what it selects.",
        "scale": f"ours: {tables['backbone']}, stage 1 {tables['compress_steps']} steps x "
                 f"{tables['batch_size']}, stage 2 at most {P3_CAP} steps x {P3_BATCH} triplets, "
                 f"{len(p3_page_tasks(tables['tasks']))} tasks at '{tables['suite']}' caps; the paper: "
                 f"{_sizes([paper_tables['backbone']])}, stage 1 {paper_tables['compress_steps']:,} steps and "
                 f"stage 2 {paper_tables['align_steps']:,} steps x {paper_tables['batch_size']} "
                 f"({source}).",
    }


def _tier_sentence(label: str, counts: dict) -> str:
    """"Headline statements: 2 of 5 tested are supported, 1 contradicted (3 more untested: ...)"."""
    untested = counts.get("untestable", 0)
    more = (f"; {untested} more {'has' if untested == 1 else 'have'} no verdict (one training run per method, too "
            "few paired units, or a model against itself)") if untested else ""
    measured = counts.get("measured", 0)
    more += (f"; {measured} {'is a measurement' if measured == 1 else 'are measurements'}, shown apart and not "
             "counted as tests") if measured else ""
    return (f"*{label}:* {counts.get('supported', 0)} of {counts.get('tested', 0)} tested "
            f"{'is' if counts.get('supported', 0) == 1 else 'are'} supported, {counts.get('contradicted', 0)} "
            f"contradicted{more}.")


def summary_markdown(paper: int, name: str, headline: dict, ablation: dict, profile: str = "standard") -> str:
    """One paper's summary paragraph; ``headline`` and ``ablation`` are the ledger's statement counts for its two
    tiers (:func:`repro.crosspaper.ledger.summary_counts`: supported, contradicted, tested, untestable)."""
    facts = scope_and_scale(paper, profile)
    return (f"**{name}.** *Scope:* {facts['scope']} {_tier_sentence('Headline statements', headline)} "
            f"{_tier_sentence('Ablation statements', ablation)} *Hard:* {facts['hard']} *Scale:* {facts['scale']}")
