"""The ``paper`` profile: every page at its paper's scale, for users with GPUs and a network, and its dry run.

    repro build --profile paper --dry-run        # resolves every page, downloads nothing, prints settings + GPU-hours
                                                 # (repro.book.dry_run)

The settings come from the papers' official code (read there, file and line cited in :data:`SOURCES`): backbones
by Hugging Face id, the MTEB task lists of their evaluation scripts through the real MTEB tasks (suite ``mteb``),
their batch sizes and steps, and Paper 3's learning rates. What a profile does not carry is said in
:data:`NOT_CARRIED` and printed by the dry run. Multi-GPU runs go through ``accelerate launch --config_file
configs/accelerate/paper.yaml`` (8 processes, bf16).

The dry run checks, without downloading anything: each page's parameters (the notebook's own names), each
backbone id (:func:`repro.core.backbones.resolve`: an HF id is not fetched), each task name against mteb's task
registry (metadata only). It then estimates GPU-hours from FLOPs:

* encoding: 2 x parameters x tokens, the tokens from mteb's descriptive statistics of each task's evaluation splits
  (and its train split for classification), 4 characters per token, each text capped at the page's max length;
* training: 6 x parameters x tokens for a full fine-tune, 4 x for LoRA (no weight gradients for the frozen
  weights), every training text counted at the max length (an upper bound);
* an A100-80GB at 312 bf16 TFLOP/s (NVIDIA's datasheet) and 40% model FLOPs utilisation (an assumption).

The estimate is an order of magnitude, not a measurement; it is labelled so wherever it is printed.
"""

from __future__ import annotations

from dataclasses import dataclass

P1_BACKBONES = ["mistralai/Mistral-7B-v0.1", "meta-llama/Meta-Llama-3-8B"]  # the layer analysis (Figures 1-2)
P1_TRAINED = ["mistralai/Mistral-7B-v0.1", "Qwen/Qwen2-0.5B"]  # the five designs; Table 5's robustness check
P2_BACKBONES = ["Qwen/Qwen2.5-0.5B", "meta-llama/Llama-3.1-8B-Instruct", "mistralai/Mistral-7B-Instruct-v0.3"]
P3_BACKBONE = "meta-llama/Llama-2-7b-hf"

_STS8 = ["BIOSSES", "SICK-R", "STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark"]
_PAIRS = ["SprintDuplicateQuestions", "TwitterSemEval2015", "TwitterURLCorpus"]
_RERANK = ["AskUbuntuDupQuestions", "MindSmallReranking", "SciDocsRR", "StackOverflowDupQuestions"]
_CQA = [f"CQADupstack{s}Retrieval" for s in ("Android", "English", "Gaming", "Gis", "Mathematica", "Physics",
                                             "Programmers", "Stats", "Tex", "Unix", "Webmasters", "Wordpress")]
_CLS11 = [f"{n}Classification" for n in ("AmazonCounterfactual", "AmazonReviews", "Banking77", "Emotion", "Imdb",
                                         "MassiveIntent", "MassiveScenario", "MTOPDomain", "MTOPIntent",
                                         "ToxicConversations", "TweetSentimentExtraction")]
P1_TASKS = ([f"{n}Classification" for n in ("AmazonPolarity", "ToxicConversations", "Imdb", "Banking77", "Emotion",
                                            "TweetSentimentExtraction")] + ["SummEval"]
            + ["ArxivClusteringP2P", "ArxivClusteringS2S", "BiorxivClusteringP2P.v2", "BiorxivClusteringS2S.v2",
               "MedrxivClusteringP2P.v2", "MedrxivClusteringS2S.v2", "RedditClustering.v2", "RedditClusteringP2P.v2",
               "StackExchangeClustering.v2", "StackExchangeClusteringP2P.v2", "TwentyNewsgroupsClustering.v2"]
            + _PAIRS + _RERANK
            + ["ArguAna", "NFCorpus", "FiQA2018", "SciFact", "Touche2020", "QuoraRetrieval", "TRECCOVID", "NQ",
               "SCIDOCS", "ClimateFEVER", "DBPedia", "MSMARCO", "HotpotQA", "FEVER"] + _STS8)
P2_TASKS = (_STS8 + ["STS17", "STS22"] + _CLS11 + ["AmazonPolarityClassification"]
            + ["BiorxivClusteringS2S", "MedrxivClusteringS2S", "TwentyNewsgroupsClustering", "ArxivClusteringP2P",
               "ArxivClusteringS2S", "BiorxivClusteringP2P", "MedrxivClusteringP2P", "RedditClustering",
               "RedditClusteringP2P", "StackExchangeClustering", "StackExchangeClusteringP2P"]
            + _PAIRS + _RERANK
            + ["SciFact", "ArguAna", "NFCorpus", "ClimateFEVER", *_CQA, "DBPedia", "FEVER", "FiQA2018", "HotpotQA",
               "MSMARCO", "NQ", "QuoraRetrieval", "SCIDOCS", "Touche2020", "TRECCOVID"] + ["SummEval"])
P3_TASKS = (_CLS11 + ["ArguAna", *_CQA, "FiQA2018", "NFCorpus", "SCIDOCS", "SciFact"]
            + ["BiorxivClusteringP2P", "BiorxivClusteringS2S", "MedrxivClusteringP2P", "MedrxivClusteringS2S",
               "StackExchangeClusteringP2P", "TwentyNewsgroupsClustering"]
            + _PAIRS + _RERANK + _STS8 + ["STS17", "STS22", "SummEval"])

# the official settings a page's parameters cannot carry, so the paper profile runs the book's instead
NOT_CARRIED = {
    "1": "Paper 1's pages take no learning rate, training data or pooling-head size: the profile trains with the "
         "book's LoRA settings (lr 2e-4 constant after 20 warm-up steps; official: lr 1e-5, 100 warm-up steps, "
         "linear decay), the book's default training data ('mix' of SNLI and MEDI triplets; official: its own "
         "1.4M-example mixture) and the book's pooling head (official: a PerceiverResampler of 768 latents, 32 heads "
         "x 2,048 dims)",
}

SOURCES = {  # where each paper's settings were read (official repositories, HEAD as read on 2026-12-02)
    "1": "yixuantt/PoolingAndAttn@57791d5: README.md:48-72 (accelerate launch: per-device batch 1 x gradient "
         "accumulation 256 x 8 processes = 2048, 1000 steps, lr 1e-5, warm-up 100, max length 1024), lora.json "
         "(r 16, alpha 32), mteb_task.py (tasks), accelerate_config.yaml (8 processes, bf16, ZeRO-2)",
    "2": "CentreChen/EmbFilter@c3958e3: utils/tasks.py (MTEB(eng, classic), 56 tasks), run4{llama,mistral,qwen}_"
         "{prompteol,echo}.py (backbones, prompts, max length 512)",
    "3": "TrustedLLM/AutoRegEmbed@06da589: run_information_compress.sh (8 per device x 4 GPUs, 1 epoch, lr 1e-5), "
         "run_condition_distribution_alignment.sh (32 per device x 4 GPUs, 4 epochs, lr 5e-6, temperature 0.1, "
         "beta 0.1), eval/eval_autoregembed.py (tasks); data sizes quoted from the paper (16k x 2 epochs, 50k x 4)",
}

# parameters (quoted from the models' Hugging Face cards), for the FLOP estimate only
PARAMETERS = {"mistralai/Mistral-7B-v0.1": 7.24e9, "meta-llama/Meta-Llama-3-8B": 8.03e9, "Qwen/Qwen2.5-0.5B": 0.49e9,
              "Qwen/Qwen2-0.5B": 0.49e9,
              "meta-llama/Llama-3.1-8B-Instruct": 8.03e9, "mistralai/Mistral-7B-Instruct-v0.3": 7.25e9,
              "meta-llama/Llama-2-7b-hf": 6.74e9}
GPU = {"name": "A100-80GB", "tflops_bf16": 312.0, "utilisation": 0.4}  # datasheet peak; utilisation assumed
CHARS_PER_TOKEN = 4.0
ACCELERATE_CONFIG = "configs/accelerate/paper.yaml"

# the official per-device scheme: batch 1 on each of 8 devices, gathered (a query sees 8 positives and 8 hard
# negatives: 15 negatives), gradients accumulated over 256 such batches: 2,048 examples a step
_P1_TRAIN = {"steps": 1000, "batch_size": 8, "accumulation": 256, "max_length": 1024, "validation_sts_pairs": 500,
             "validation_triplets": 300, "suite": "mteb", "tasks": P1_TASKS, "seed": 0}
_P3 = {"backbone": P3_BACKBONE, "suite": "mteb", "finetune": "full", "compress_steps": 1000,
       "compress_max_length": 512, "compress_lr": 1e-5, "compress_data": "instruction", "align_steps": 1563,
       "align_lr": 5e-6, "warmup_steps": 50, "batch_size": 128, "train_examples": 0, "validation_examples": 64,
       "validation_sts_pairs": 300, "validation_triplets": 300, "seed": 0, "tasks": P3_TASKS,
       "template": "official"}

PAPER: dict[str, dict] = {
    "p1_layer_correlation": {"backbones": P1_BACKBONES, "n_sentences": 1000},
    "p1_layerwise_mteb": {"backbones": P1_BACKBONES, "suite": "mteb", "tasks": P1_TASKS, "layer_step": 1,
                          "n_reference": 2000},
    "p1_train": {"backbone": P1_BACKBONES[0], "model": 5, **_P1_TRAIN},
    "p1_tables": {"backbones": P1_BACKBONES[:1], "models": [1, 2, 3, 4, 5], **_P1_TRAIN},
    "p1_converged": {"backbones": P1_BACKBONES[:1], "table5_backbones": [], "models": [1, 2, 3, 4, 5],
                     "seeds": [0, 1, 2], "backbone_seeds": {}, "suite": "mteb",
                     "budget_suite": "mteb", "curve_pairs": [[1, 5], [4, 5]]},
    "p1_robustness": {"backbone": P1_TRAINED[1], "reference_backbone": P1_TRAINED[0],
                      "models": [1, 2, 3, 4, 5], "reference_steps": 1000, **_P1_TRAIN},
    **{name: {"backbones": P2_BACKBONES, "prompts": ["prompteol-summarize", "echo"], "skip_runs": [], "suite": "mteb",
              "tasks": P2_TASKS, "tokenization": "official", "ratios": [1, 2, 4, 8], "earlier_tasks": []}
       for name in ("p2_main_table", "p2_filter_types")},
    "p2_vocab_probe": {"backbones": P2_BACKBONES, "prompt": "prompteol-summarize", "n_sentences": 500,
                       "n_resamples": 1000},
    "p2_spectrum": {"backbones": P2_BACKBONES, "prompts": ["prompteol-summarize", "echo"], "n_sentences": 500},
    "p2_dimension_cost": {"backbones": P2_BACKBONES, "prompts": ["prompteol-summarize"], "skip_runs": [],
                          "suite": "mteb", "tasks": ["SciFact", "NFCorpus", "ArguAna"], "ratios": [1, 2, 4, 8]},
    "p3_tables": {**_P3, "methods": None},
    "p3_data_efficiency": {**_P3, "sizes": [1000, 2000, 5000, 10000, 50000], "seeds": [0, 1, 2], "epochs": 1.0,
                           "methods": ["AutoRegEmbed", "last token, in-batch", "mean, in-batch"],
                           "references": ["compression only", "PromptEOL"]},
    "p3_ablations": {**_P3, "variants": ["full", "no-compression", "logsigmoid", "kl", "js", "tanh", "reference-code",
                                         "strategy1", "strategy2", "strategy3", "strategy4"],
                     "temperatures": [0.02, 0.05, 0.1, 1.0], "betas": [0.05, 0.1, 0.2]},
    "p3_memory": {"backbone": P3_BACKBONE, "batch_sizes": [8, 16, 32], "steps": 4, "max_length": 512},
}
PAPER_OF = {"p1": "1", "p2": "2", "p3": "3"}


@dataclass(frozen=True)
class Work:
    """One piece of a page's compute: encode or train ``tokens`` with ``backbone``."""

    kind: str  # encode | train-full | train-lora
    backbone: str
    tokens: float
    what: str

    @property
    def flops(self) -> float:
        per_token = {"encode": 2, "train-full": 6, "train-lora": 4}[self.kind]
        return per_token * PARAMETERS.get(self.backbone, float("nan")) * self.tokens

    @property
    def gpu_hours(self) -> float:
        return self.flops / (GPU["tflops_bf16"] * 1e12 * GPU["utilisation"]) / 3600


def task_tokens(name: str, max_length: int = 512) -> float:
    """Tokens to encode one real MTEB task (evaluation splits, plus train for classification), from mteb's
    descriptive statistics (metadata shipped with mteb: nothing is downloaded); texts capped at ``max_length``."""
    import mteb  # (here: every page imports this module through repro.pages.parameters, and most never need mteb)

    task = mteb.get_task(name)
    stats = task.metadata.descriptive_stats or {}
    splits = list(task.metadata.eval_splits) + (["train"] if task.metadata.type == "Classification" else [])
    total = 0.0
    for split in splits:
        split_stats = stats.get(split) or {}
        text = split_stats.get("text_statistics") or {}
        if text.get("average_text_length") and split_stats.get("num_samples"):
            per_text = min(text["average_text_length"] / CHARS_PER_TOKEN, max_length)
            total += split_stats["num_samples"] * per_text
        elif split_stats.get("number_of_characters"):
            total += split_stats["number_of_characters"] / CHARS_PER_TOKEN
    return total


def _suite_tokens(tasks, prompt_factor: float = 1.0) -> float:
    return prompt_factor * sum(task_tokens(t) for t in tasks)


PROMPT_FACTOR = {"echo": 2.2, "prompteol-summarize": 1.3, "prompteol": 1.3}  # template and copies, roughly


def page_work(name: str, p: dict) -> list[Work]:
    """The compute of page ``name`` with parameters ``p`` (read-only pages: none)."""
    work: list[Work] = []
    if name == "p1_layer_correlation":
        work += [Work("encode", b, p["n_sentences"] * 30, "sentences") for b in p["backbones"]]
    elif name == "p1_layerwise_mteb":
        work += [Work("encode", b, _suite_tokens(p["tasks"]), "every task, all layers in one forward")
                 for b in p["backbones"]]
    elif name in ("p1_train", "p1_tables", "p1_converged", "p1_robustness"):
        backbones = [p["backbone"]] if "backbone" in p else p["backbones"]
        models = [p["model"]] if "model" in p else p["models"]
        seeds = len(p.get("seeds", [0]))
        steps, length = p.get("steps", 600), p.get("max_length", 64)
        batch = p.get("batch_size", 16) * p.get("accumulation", 1)  # examples per optimizer step
        for b in backbones:
            for m in models:
                work.append(Work("train-lora", b, seeds * steps * batch * 3 * length, f"model {m}, {seeds} seed(s)"))
                work.append(Work("encode", b, seeds * _suite_tokens(p.get("tasks") or P1_TASKS), f"model {m} scored"))
    elif name in ("p2_main_table", "p2_filter_types", "p2_dimension_cost"):
        for b in p["backbones"]:
            for prompt in p["prompts"]:
                work.append(Work("encode", b, _suite_tokens(p["tasks"], PROMPT_FACTOR.get(prompt, 1.0)), prompt))
    elif name in ("p2_vocab_probe", "p2_spectrum"):
        work += [Work("encode", b, p["n_sentences"] * 40, "sentences") for b in p["backbones"]]
    elif name.startswith("p3_") and "compress_steps" in p:
        runs = {"p3_tables": 1 + 4, "p3_data_efficiency": len(p.get("sizes", [])) * len(p.get("seeds", [0]))
                * len(p.get("methods") or []), "p3_ablations": len(p.get("variants", [])) + len(
                    p.get("temperatures", [])) + len(p.get("betas", []))}[name]
        stage1 = p["compress_steps"] * p["batch_size"] * 2 * p["compress_max_length"]
        stage2 = p["align_steps"] * p["batch_size"] * 4 * p["compress_max_length"]  # query, positive, negative, ref
        work.append(Work("train-full", p["backbone"], stage1, "stage 1 (compression)"))
        work.append(Work("train-full", p["backbone"], runs * stage2, f"{runs} stage-2 or baseline runs"))
        work.append(Work("encode", p["backbone"], (runs + 1) * _suite_tokens(p["tasks"]), "every run scored"))
    elif name == "p3_memory":
        work += [Work("train-full", p["backbone"], p["steps"] * b * 4 * p["max_length"], f"batch {b}")
                 for b in p["batch_sizes"]]
    return work
