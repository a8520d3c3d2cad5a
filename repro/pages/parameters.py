"""Every page of the book with its parameters per profile: the one source of page parameters.

``smoke`` is what the tests build (minutes); ``standard`` is what the book shows, computed from committed
results; ``paper`` is each page at its paper's scale (:mod:`repro.pages.paper_profile`), for GPUs with a network,
resolved offline by ``repro build --profile paper --dry-run``. Each notebook's parameters cell holds exactly its ``standard`` profile (a test checks it), so a
reader who opens a page in Jupyter and runs it top to bottom gets the book's page, from committed results.
"""

from __future__ import annotations

from repro.pages.paper_profile import PAPER

# The EmbedFilter sweeps the standard book shows (committed by scripts/p2_sweeps.sh; the grid is every backbone x
# prompt whose sweep over P2_TASKS is committed)
P2_BACKBONES = ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"]
P2_PROMPTS = ["prompteol", "echo"]
# "backbone:prompt" runs of that grid whose sweeps under EmbedFilter's official tokenization (every task of the
# suite) are not committed yet: left out of the pages until scripts/p2_sweeps.sh has stored them
P2_PENDING: list[str] = []
# the earlier scope: every run on the 9 STS sets under the book's piece-wise tokenization
P2_TASKS = ["STSBenchmark", "SICK-R", "BIOSSES", "STS12", "STS13", "STS14", "STS15", "STS16", "STS17"]

# Table 5's tasks on the second backbone: the compact suite without its two slowest tasks to encode (IMDB and
# ArguAna, ~35% of an evaluation); every category keeps at least one task
P1_ROBUSTNESS_TASKS = ["STSBenchmark", "SICK-R", "BIOSSES", "STS12", "STS13", "STS14", "STS15", "STS16", "STS17",
                       "AmazonCounterfactualClassification", "Banking77Classification", "EmotionClassification",
                       "TweetSentimentExtractionClassification", "TwentyNewsgroupsClustering", "TwitterURLCorpus",
                       "SciFact", "NFCorpusPreprocessed"]

# Paper 3's stage parameters (repro.autoregembed.experiments.configs.page_configs), shared by its training pages
P3_STAGES = {
    "smoke": {"backbone": "smollm2-135m", "finetune": "full", "compress_steps": 1, "compress_max_length": 64,
              "compress_lr": 1e-4, "compress_data": "instruction", "align_steps": 1, "align_lr": 5e-06,
              "warmup_steps": 0, "batch_size": 2, "train_examples": 8, "validation_examples": 4,
              "validation_sts_pairs": 8, "validation_triplets": 8, "seed": 0, "template": "book"},
    "standard": {"backbone": "smollm2-135m", "finetune": "full", "compress_steps": 300, "compress_max_length": 160,
                 "compress_lr": 1e-4, "compress_data": "instruction", "align_steps": 150, "align_lr": 5e-06,
                 "warmup_steps": 10, "batch_size": 8, "train_examples": 0, "validation_examples": 64,
                 "validation_sts_pairs": 300, "validation_triplets": 300, "seed": 0, "template": "book"},
}

# Every notebook, in book order, with its parameters per profile. `paper` profiles only resolve.
NOTEBOOKS: dict[str, dict[str, dict]] = {
    "intro": {  # the answer: every headline statement's verdict, from the claims ledger
        "smoke": {"profile": "smoke"},
        "standard": {"profile": "standard"},
    },
    "leaderboard": {  # reads the stored compact scores of every method (repro.crosspaper.leaderboard)
        "smoke": {"profile": "smoke", "backbone": "smollm2-135m"},
        "standard": {"profile": "standard", "backbone": "smollm2-135m"},
    },
    "claims_ledger": {  # reads the stored results of the pages whose claims it lists, for their parameters
        "smoke": {"profile": "smoke", "simulations": 100},
        "standard": {"profile": "standard", "simulations": 2000},
    },
    "p1_layer_correlation": {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "n_sentences": 64},
        "standard": {"profile": "standard", "backbones": ["smollm2-135m", "gemma3-270m"], "n_sentences": 1000},
    },
    "p1_layerwise_mteb": {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "suite": "smoke",
                  "tasks": ["STSBenchmark", "STS17", "AmazonCounterfactualClassification",
                            "TwentyNewsgroupsClustering", "TwitterURLCorpus", "SciFact"],
                  "layer_step": 10, "n_reference": 200},
        "standard": {"profile": "standard", "backbones": ["smollm2-135m", "gemma3-270m"], "suite": "standard",
                     "tasks": None, "layer_step": 1, "n_reference": 2000},
    },
    "p1_train": {
        "smoke": {"profile": "smoke", "backbone": "smollm2-135m", "model": 5, "steps": 2, "batch_size": 4, "accumulation": 1,
                  "max_length": 32, "validation_sts_pairs": 16, "validation_triplets": 8, "suite": "smoke",
                  "tasks": ["STSBenchmark", "STS17"], "seed": 0},
        "standard": {"profile": "standard", "backbone": "smollm2-135m", "model": 5, "steps": 150, "batch_size": 16, "accumulation": 1,
                     "max_length": 64, "validation_sts_pairs": 500, "validation_triplets": 300, "suite": "compact",
                     "tasks": None, "seed": 0},
    },
    "p1_tables": {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "models": [1, 2, 3, 4, 5], "steps": 2,
                  "batch_size": 4, "accumulation": 1, "max_length": 32, "validation_sts_pairs": 16, "validation_triplets": 8,
                  "suite": "smoke", "tasks": ["STSBenchmark", "STS17"], "seed": 0},
        "standard": {"profile": "standard", "backbones": ["smollm2-135m"], "models": [1, 2, 3, 4, 5], "steps": 150,
                     "batch_size": 16, "accumulation": 1, "max_length": 64, "validation_sts_pairs": 500, "validation_triplets": 300,
                     "suite": "compact", "tasks": None, "seed": 0},
    },
    "p1_converged": {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "models": [1, 5], "seeds": [0], "backbone_seeds": {},
                  "suite": "smoke", "budget_suite": "smoke", "curve_pairs": [[1, 5]]},
        # Table 5's backbone: models 1, 4 and 5 (the declared seeds rule: three seeds on the second backbone) on its 17 tasks
        "standard": {"profile": "standard", "backbones": ["smollm2-135m", "gemma3-270m"], "models": [1, 2, 3, 4, 5],
                     "backbone_models": {"gemma3-270m": [1, 4, 5]}, "backbone_seeds": {"gemma3-270m": [0, 1, 2]},
                     "backbone_tasks": {"gemma3-270m": P1_ROBUSTNESS_TASKS},
                     "table5_backbones": ["gemma3-270m"],
                     "seeds": [0, 1, 2, 3, 4], "suite": "compact", "budget_suite": "small",
                     "curve_pairs": [[1, 5], [4, 5]]},
    },
    "p1_robustness": {
        # the smoke profile reuses p1_tables' smoke models (the mechanics, not a second backbone)
        "smoke": {"profile": "smoke", "backbone": "smollm2-135m", "reference_backbone": "smollm2-135m",
                  "models": [1, 2, 3, 4, 5], "steps": 2, "reference_steps": 2, "batch_size": 4, "accumulation": 1, "max_length": 32,
                  "validation_sts_pairs": 16, "validation_triplets": 8, "suite": "smoke",
                  "tasks": ["STSBenchmark", "STS17"], "seed": 0},
        "standard": {"profile": "standard", "backbone": "gemma3-270m", "reference_backbone": "smollm2-135m",
                     "models": [1, 2, 3, 4, 5], "steps": 150, "reference_steps": 150, "batch_size": 16, "accumulation": 1,
                     "max_length": 64, "validation_sts_pairs": 500, "validation_triplets": 300, "suite": "compact",
                     "tasks": P1_ROBUSTNESS_TASKS, "seed": 0},
    },
    **{name: {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "prompts": ["prompteol"], "skip_runs": [],
                  "suite": "smoke", "tasks": ["STSBenchmark", "STS17", "SciFact"], "tokenization": "official",
                  "ratios": [1, 2], "earlier_tokenization": "pieces", "earlier_tasks": []},
        # every backbone x prompt on every task under the official tokenization (scripts/p2_sweeps.sh); the
        # earlier scope: the 9 STS sets under the piece-wise tokenization
        "standard": {"profile": "standard", "backbones": P2_BACKBONES, "prompts": P2_PROMPTS,
                     "skip_runs": P2_PENDING, "suite": "compact", "tasks": None, "tokenization": "official",
                     "ratios": [1, 2, 4, 8], "earlier_tokenization": "pieces", "earlier_tasks": P2_TASKS},
    } for name in ("p2_main_table", "p2_filter_types")},
    "p2_vocab_probe": {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "prompt": "prompteol", "tokenization": "official",
                  "n_sentences": 40, "n_resamples": 50},
        "standard": {"profile": "standard", "backbones": ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"],
                     "prompt": "prompteol", "tokenization": "official", "n_sentences": 500, "n_resamples": 1000},
    },
    "p2_spectrum": {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "prompts": ["prompteol"], "n_sentences": 40,
                  "tokenization": "official"},
        "standard": {"profile": "standard", "backbones": ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"],
                     "prompts": ["prompteol", "echo"], "n_sentences": 500, "tokenization": "official"},
    },
    "p2_dimension_cost": {
        "smoke": {"profile": "smoke", "backbones": ["smollm2-135m"], "prompts": ["prompteol"], "skip_runs": [],
                  "suite": "smoke", "tasks": ["STSBenchmark", "STS17", "SciFact"], "tokenization": "official",
                  "ratios": [1, 2]},
        # the retrieval tasks of the main table's sweeps (scripts/p2_sweeps.sh)
        "standard": {"profile": "standard", "backbones": P2_BACKBONES, "prompts": ["prompteol"],
                     "skip_runs": [r for r in P2_PENDING if r.endswith(":prompteol")], "suite": "compact",
                     "tasks": ["SciFact", "ArguAna", "NFCorpusPreprocessed"], "tokenization": "official",
                     "ratios": [1, 2, 4, 8]},
    },
    "p1_summary": {  # reads the claims ledger and the converged Paper 1 runs, for their pages' parameters
        "smoke": {"profile": "smoke"},
        "standard": {"profile": "standard"},
    },
    "p2_summary": {  # reads the claims ledger and the stored results of the Paper 2 pages, for their parameters
        "smoke": {"profile": "smoke"},
        "standard": {"profile": "standard"},
    },
    "p3_tables": {
        "smoke": {"profile": "smoke", "suite": "smoke", **P3_STAGES["smoke"],
                  "tasks": ["STSBenchmark"],
                  "methods": ["last token", "PromptEOL", "last token, in-batch", "compression only", "AutoRegEmbed"]},
        "standard": {"profile": "standard", "suite": "compact", **P3_STAGES["standard"],
                     "tasks": None, "methods": None},
    },
    "p3_data_efficiency": {
        "smoke": {"profile": "smoke", "suite": "smoke", **P3_STAGES["smoke"],
                  "tasks": ["STSBenchmark"], "sizes": [4, 8], "seeds": [0],
                  "epochs": 0.25, "methods": ["AutoRegEmbed", "last token, in-batch"],
                  "references": ["compression only", "PromptEOL"]},
        "standard": {"profile": "standard", "suite": "small", **P3_STAGES["standard"],
                     "tasks": None, "sizes": [64, 128, 256, 512, 1024],
                     "seeds": [0, 1], "epochs": 1.0,
                     # the two in-batch baselines (the paper's strongest early risers); the hard-negative ones
                     # are parameters (-p methods=...) left out of the book's budget
                     "methods": ["AutoRegEmbed", "last token, in-batch", "mean, in-batch"],
                     "references": ["compression only", "PromptEOL"]},
    },
    "p3_ablations": {
        "smoke": {"profile": "smoke", "suite": "smoke", **P3_STAGES["smoke"],
                  "tasks": ["STSBenchmark"],
                  "variants": ["full", "js"], "temperatures": [0.05], "betas": [0.1]},
        "standard": {"profile": "standard", "suite": "small", **P3_STAGES["standard"],
                     "align_steps": 75, "tasks": None,
                     # ids of repro.autoregembed.experiments.ablations.VARIANTS (tables show their labels)
                     "variants": ["full", "no-compression", "logsigmoid", "kl", "js", "tanh", "reference-code",
                                  "strategy1", "strategy2", "strategy3", "strategy4"],
                     "temperatures": [0.02, 0.05, 0.1, 1.0], "betas": [0.05, 0.1, 0.2]},
    },
    "p3_memory": {
        "smoke": {"profile": "smoke", "backbone": "smollm2-135m", "batch_sizes": [2], "steps": 2, "max_length": 32},
        "standard": {"profile": "standard", "backbone": "smollm2-135m", "batch_sizes": [4, 8, 16, 32, 64], "steps": 4,
                     "max_length": 64},
    },
    "p3_converged": {  # reads the stored search, seeds and budget points (repro.autoregembed.experiments.converged)
        "smoke": {"profile": "smoke", "backbone": "smollm2-135m", "seeds": [0], "suite": "smoke",
                  "budget_suite": "smoke"},
        "standard": {"profile": "standard", "backbone": "smollm2-135m", "seeds": [0, 1, 2], "suite": "compact",
                     "budget_suite": "small"},
    },
    "p3_summary": {  # reads the stored results of the five Paper 3 pages above, for their parameters
        "smoke": {"profile": "smoke", "tables": None, "data_efficiency": None, "ablations": None, "memory": None,
                  "converged": None},
        "standard": {"profile": "standard", "tables": None, "data_efficiency": None, "ablations": None,
                     "memory": None, "converged": None},
    },
    "reproducibility": {
        "smoke": {"profile": "smoke"},
        "standard": {"profile": "standard"},
    },
    "rerun": {  # reads what the standard build records of every page (repro.book.page_costs)
        "smoke": {"profile": "smoke"},
        "standard": {"profile": "standard"},
    },
    "book_cost": {  # reads the timings and provenance of every stored result
        "smoke": {"profile": "smoke"},
        "standard": {"profile": "standard"},
    },
}
PROFILES = ("smoke", "standard", "paper")

# Every page parameter's type, once (a name means the same on every page): (type, may be None); ``(list, T)`` is a
# list of T. repro.book.notebook.check_page checks a page's parameters against it
PARAMETER_TYPES: dict[str, tuple] = {
    "profile": (str, False), "recompute": (bool, False), "simulations": (int, False),
    "backbone": (str, False), "backbones": ((list, str), False), "reference_backbone": (str, False),
    "prompt": (str, False), "prompts": ((list, str), False), "skip_runs": ((list, str), False),
    "suite": (str, False), "budget_suite": (str, False), "tasks": ((list, str), True),
    "earlier_tasks": ((list, str), False), "tokenization": (str, False), "earlier_tokenization": (str, False),
    "ratios": ((list, int), False), "n_sentences": (int, False), "n_resamples": (int, False),
    "n_reference": (int, False), "layer_step": (int, False),
    "model": (int, False), "models": ((list, int), False), "seed": (int, False), "seeds": ((list, int), False),
    "steps": (int, False), "reference_steps": (int, False), "batch_size": (int, False),
    "batch_sizes": ((list, int), False), "accumulation": (int, False), "max_length": (int, False),
    "validation_sts_pairs": (int, False), "validation_triplets": (int, False),
    "backbone_models": (dict, False), "backbone_seeds": (dict, False), "backbone_tasks": (dict, False),
    "table5_backbones": ((list, str), False), "curve_pairs": ((list, list), False),
    "finetune": (str, False), "compress_steps": (int, False), "compress_max_length": (int, False),
    "compress_lr": (float, False), "compress_data": (str, False), "align_steps": (int, False),
    "align_lr": (float, False), "warmup_steps": (int, False), "train_examples": (int, False),
    "validation_examples": (int, False), "template": (str, False), "methods": ((list, str), True), "references": ((list, str), False),
    "sizes": ((list, int), False), "epochs": ((int, float), False), "variants": ((list, str), False),
    "temperatures": ((list, (int, float)), False), "betas": ((list, (int, float)), False),
    **{page: (dict, True) for page in ("tables", "data_efficiency", "ablations", "memory", "converged")},
}
# Pages that only read what the other pages store (a build running pages at once runs these after the others)
READERS = ("leaderboard", "claims_ledger", "intro", "p1_summary", "p2_summary", "p3_converged", "p3_summary",
           "book_cost", "rerun")

# `paper`: each page at its paper's scale (repro.pages.paper_profile: HF ids, the real MTEB tasks, the official
# batch sizes, steps and learning rates); the pages that only read stored results keep their standard parameters
for _name, _profiles in NOTEBOOKS.items():
    _profiles["paper"] = {**_profiles["standard"], **PAPER.get(_name, {}), "profile": "paper"}


def page_parameters(name: str, profile: str, overrides: dict | None = None) -> dict:
    """The parameters the book runs notebook ``name`` with under ``profile``, with ``overrides`` (checked: only
    parameters the notebook has, plus ``recompute``)."""
    if name not in NOTEBOOKS:
        raise ValueError(f"unknown notebook '{name}'; valid: {', '.join(NOTEBOOKS)}")
    if profile not in PROFILES:
        raise ValueError(f"unknown profile '{profile}'; valid: {', '.join(PROFILES)}")
    if overrides is not None and not isinstance(overrides, dict):
        raise TypeError(f"overrides of '{name}' must be a dict of parameters, got {type(overrides).__name__}")
    params = dict(NOTEBOOKS[name][profile])
    unknown = set(overrides or {}) - set(params) - {"recompute"}
    if unknown:
        raise ValueError(f"notebook '{name}' has no parameter(s) {sorted(unknown)}; it has {sorted(params)}")
    return params | (overrides or {})
