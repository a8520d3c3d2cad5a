"""AutoRegEmbed experiments: train-or-load both stages, score them with mteb, and the untrained baselines.

* :func:`train_or_load_autoreg`: run folders ``runs/<backbone>-ar-<stage>-<hash>`` (not committed: rebuilt by
  the same command); stage 2 trains (or finds) its stage 1 first. Training summaries (curves, examples and
  tokens seen, seconds) go to ``results/autoreg_runs/``.
* :func:`evaluate_autoreg`: per-task mteb scores (STS per-pair similarities kept) in ``results/autoreg_scores/``,
  keyed by the full configuration, the suite and the task. Retrieval documents use the passage prompt.
* :func:`evaluate_untrained`: the raw backbone (last token, mean; no prompt) and PromptEOL on the same
  tasks, in ``results/autoreg_untrained/``.

    python -m repro.autoregembed.experiments --stage align --steps 100 --suite compact
"""

from __future__ import annotations

import argparse
import re
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from repro.autoregembed.config import (
    NEXT_INSTRUCTION,
    PASSAGE_PROMPT,
    QUERY_PROMPT,
    AlignConfig,
    CompressConfig,
)
from repro.autoregembed.model import TextIds, embed_texts
from repro.autoregembed.train import (
    encoder_digest,
    load_encoder,
    train_alignment,
    train_compression,
)
from repro.core.evaluate import CosineSimilarity, model_meta, texts_from
from repro.core.tasks import STS_TASKS
from repro.pooling_attention.trained import evaluate_per_task, runs_dir, train_run_once
from repro.store.identity import config_identity
from repro.store.lanes import in_lane_order
from repro.store.results import load_or_compute, load_result, params_key

if TYPE_CHECKING:
    from repro.training.contrastive import TrainConfig

RUNS_EXPERIMENT = "autoreg_runs"
SCORES_EXPERIMENT = "autoreg_scores"
UNTRAINED_EXPERIMENT = "autoreg_untrained"
RETRIEVAL_TASKS = ["SciFact", "NFCorpusPreprocessed"]  # the retrieval pair (MS MARCO is not offline)


def stage_of(config: CompressConfig | AlignConfig) -> str:
    if isinstance(config, AlignConfig):
        return "align"
    if isinstance(config, CompressConfig):
        return "compress"
    raise TypeError(f"expected a CompressConfig or AlignConfig, got {type(config).__name__}")


def run_folder(config: CompressConfig | AlignConfig) -> Path:
    short = Path(config.backbone).name if "/" in config.backbone else config.backbone
    return runs_dir() / f"{short}-ar-{stage_of(config)}-{params_key(config_identity(config)).rsplit('-', 1)[-1]}"


def run_params(config: CompressConfig | AlignConfig) -> dict:
    """The key of a run's stored training summary in ``results/autoreg_runs/``."""
    return {"stage": stage_of(config), "config": config_identity(config)}


def ensure_trained(config: CompressConfig | AlignConfig, progress: bool = True) -> tuple[Path, dict]:
    """Train (or resume) ``config`` if its weights or stored summary are missing, without loading the model
    (stage 2 trains its stage 1 first); returns the run folder and the stored training summary."""
    folder = run_folder(config)

    def train_here():
        if isinstance(config, AlignConfig):
            compressed = None
            if config.compress is not None:
                compressed = ensure_trained(config.compress, progress)[0] / "final"
            train_alignment(config, folder, compressed, progress=progress)
        else:
            train_compression(config, folder, progress=progress)

    return folder, train_run_once(folder, RUNS_EXPERIMENT, run_params(config), train_here, "config.json")


def train_or_load_autoreg(config: CompressConfig | AlignConfig, progress: bool = True):
    """The trained encoder for ``config`` (training, resuming or loading it; stage 1 first if needed) and
    its stored training summary."""
    folder, record = ensure_trained(config, progress)
    model, loaded = load_encoder(folder / "final")
    if loaded != config:
        raise ValueError(f"{folder} holds an encoder trained with another configuration")
    return model, record


UNINFORMATIVE_EXPERIMENT = "autoreg_uninformative"


def uninformative_reconstruction(compress: CompressConfig, recompute: bool = False) -> float:
    """Stage 1's reference line: the held-out reconstruction loss (the same ``validation_examples`` rows the
    run validates on) of the frozen decoder given an uninformative memory, the untrained model's compression
    tokens for every text (:func:`repro.autoregembed.method.validation_reconstruction`); stored."""
    from repro.autoregembed.data import read_stage1
    from repro.autoregembed.model import TextIds, build_autoreg
    from repro.autoregembed.train import validation_reconstruction

    identity = config_identity(compress)  # (a setting added later is in the key only when not at its default)
    params = {name: identity[name] for name in ("backbone", "compression_tokens", "max_length", "target_max_length",
                                                "validation_examples", "data") if name in identity}
    # the untrained tokens do not depend on the seed, the lr or the steps: those are not in the key

    def compute():
        model = build_autoreg(compress)
        texts = TextIds(model.backbone.tokenizer, compress.max_length, compress.target_max_length)
        loss = validation_reconstruction(model, texts, read_stage1(compress.data)[:compress.validation_examples],
                                         informative=False)
        return pd.DataFrame([{"validation_loss": loss}]), {}, {}

    return float(load_or_compute(UNINFORMATIVE_EXPERIMENT, params, compute, recompute)["rows"][0]["validation_loss"])


def stage1_data_profile(compress: CompressConfig) -> pd.Series:
    """What stage 1 trains on: over the instruction examples its steps draw, the target length in tokens
    (what the frozen decoder must regenerate from the k compression states) and the share of inputs cut at
    ``max_length``. Short targets ask little of the memory: a one-word answer can be reconstructed from a
    memory that carries little of the text."""
    import numpy as np

    from repro.autoregembed.data import read_stage1
    from repro.autoregembed.objectives import seen_indices
    from repro.core.backbones import load_backbone

    rows = read_stage1(compress.data)[compress.validation_examples:]
    seen = [rows[i] for i in seen_indices(len(rows), compress)]
    tok = load_backbone(compress.backbone).tokenizer
    target = np.array([len(tok(r["output"], add_special_tokens=False).input_ids) for r in seen])
    source = np.array([len(tok(r["context"] + "\n" + r["instruction"], add_special_tokens=False).input_ids)
                       for r in seen])
    return pd.Series({"examples drawn": len(seen), "target tokens (median)": float(np.median(target)),
                      "targets of <= 3 tokens": float((target <= 3).mean()),
                      "targets cut (longer than the target limit)": float((target > compress.target_max_length - 1).mean()),
                      "input tokens (median)": float(np.median(source)),
                      "inputs cut (longer than the input limit)": float((source > compress.max_length).mean())})


class AutoRegEncoder(CosineSimilarity):
    """mteb encoder: mean of the compression states, L2-normalised; retrieval documents with the passage
    prompt, everything else (STS sentences, queries) with ``{text}\\n{instruction}``."""

    def __init__(self, model, max_length: int, target_max_length: int, instruction: str = NEXT_INSTRUCTION,
                 label: str = "autoregembed"):
        self.model, self.instruction = model, instruction
        self.texts = TextIds(model.backbone.tokenizer, max_length, target_max_length)
        self.mteb_model_meta = model_meta(label, "local", model.backbone.hidden_size)

    def encode(self, inputs, *, task_metadata=None, hf_split=None, hf_subset=None, prompt_type=None,
               **kwargs) -> np.ndarray:
        texts = texts_from(inputs)
        document = getattr(prompt_type, "value", prompt_type) == "document"
        if document and getattr(task_metadata, "type", None) == "Retrieval":
            return embed_texts(self.model, self.texts, texts, PASSAGE_PROMPT)
        return embed_texts(self.model, self.texts, texts, QUERY_PROMPT, self.instruction)


def evaluate_autoreg(config: CompressConfig | AlignConfig, suite: str = "compact",
                     tasks: Sequence[str] | None = None, eval_max_length: int = 512, progress: bool = True,
                     recompute: bool = False) -> pd.DataFrame:
    """Scores of the trained encoder per task (stored per task; trains or loads only if a task is missing)."""
    tasks = list(tasks) if tasks is not None else STS_TASKS + RETRIEVAL_TASKS
    stage = stage_of(config)

    def make_encoder():
        model, _ = train_or_load_autoreg(config, progress)
        instruction = getattr(config, "instruction", NEXT_INSTRUCTION)
        return AutoRegEncoder(model, eval_max_length, config.target_max_length, instruction,
                              label=f"autoregembed-{stage}"), encoder_digest(model)

    identity = {"stage": stage, "config": config_identity(config), "eval_max_length": eval_max_length}
    frame = evaluate_per_task(SCORES_EXPERIMENT, identity, suite, tasks, make_encoder, progress, recompute,
                              label=f"AutoRegEmbed {stage}")
    return frame.assign(stage=stage)


def stage1_provenance(aligns: Sequence[AlignConfig], scored_stage1: str | None = None) -> str:
    """Which stage-1 weights the stored stage-2 runs ``aligns`` started from (CPU training is not
    bit-reproducible across machines: a stage 1 retrained elsewhere is a different starting point), and, given
    ``scored_stage1`` (the weights digest of the stored compression-only scores), whether compression only
    was scored from those same weights."""
    line = _stage2_starts(aligns)
    if scored_stage1 is None:
        return line
    starts = {(load_result(RUNS_EXPERIMENT, run_params(c)) or {}).get("summary", {}).get("initial_digest")
              for c in aligns if c.compress is not None} - {None}
    if starts == {scored_stage1}:
        return line + f" Compression only was scored from those same weights ({scored_stage1})."
    if scored_stage1 in starts:
        return line + f" Compression only was scored from one of them ({scored_stage1})."
    return line + (f" Compression only was scored from other stage-1 weights ({scored_stage1}): comparisons with "
                   "it include the difference between two stage-1 trainings.")


def _stage2_starts(aligns: Sequence[AlignConfig]) -> str:
    starts: dict[str, int] = {}
    unique = {params_key(run_params(c)): c for c in aligns}  # a grid point may repeat a named run
    for config in unique.values():
        if config.compress is None:
            continue
        record = load_result(RUNS_EXPERIMENT, run_params(config))
        start = (record or {}).get("summary", {}).get("initial_digest", "not recorded")
        starts[start] = starts.get(start, 0) + 1
    if not starts:
        return "No stored stage-2 run starts from a stage 1."
    if len(starts) == 1:
        return (f"All {sum(starts.values())} stored stage-2 runs start from the same stage-1 weights "
                f"(sha256 {next(iter(starts))}).")
    return ("The stored stage-2 runs start from different stage-1 trainings (weights sha256: "
            + ", ".join(f"{d} x{n}" for d, n in starts.items())
            + "); stage 1 was retrained between them, so their differences include that of two stage-1 runs.")


UNTRAINED = {  # label -> (prompt, pooling)
    "last token": ("none-noeos", "last"),
    "mean": ("none-noeos", "mean"),
    "PromptEOL": ("prompteol", "last"),
}


def evaluate_untrained(backbone: str, suite: str = "compact", tasks: Sequence[str] | None = None,
                       max_length: int = 512, progress: bool = True, recompute: bool = False,
                       labels: Sequence[str] | None = None) -> pd.DataFrame:
    """The raw backbone's last layer (last token and mean, no prompt) and PromptEOL, per task (stored);
    ``labels``: only these of :data:`UNTRAINED` (None: all three)."""
    from repro.core.backbones import load_backbone
    from repro.core.encode import EncodeConfig
    from repro.core.evaluate import StatesEncoder, evaluate_encoders
    from repro.core.tasks import (
        check_task_names,
        data_fingerprint,
        describe_suite,
        offline_task,
        suite_caps,
    )
    from repro.store.results import encode_array

    suite_caps(suite)
    tasks = check_task_names(list(tasks) if tasks is not None else STS_TASKS + RETRIEVAL_TASKS)
    labels = list(labels) if labels is not None else list(UNTRAINED)
    unknown = set(labels) - set(UNTRAINED)
    if unknown:
        raise ValueError(f"unknown untrained method(s) {sorted(unknown)}; valid: {', '.join(UNTRAINED)}")
    state: dict = {}
    runs = {}
    for name in tasks:
        for label in labels:
            prompt, pooling = UNTRAINED[label]
            params = {"backbone": backbone, "prompt": prompt, "pooling": pooling, "max_length": max_length,
                      "suite": suite, "caps": describe_suite(suite), "task": name, "data": data_fingerprint(name)}

            def compute(prompt=prompt, pooling=pooling, label=label, name=name):
                if "backbone" not in state:
                    state["backbone"] = load_backbone(backbone)
                model = state["backbone"]
                # every pooling of this prompt from one forward (the cache then serves the other label)
                poolings = tuple(sorted({pool for pr, pool in UNTRAINED.values() if pr == prompt}))
                config = EncodeConfig(prompt=prompt, poolings=poolings, max_length=max_length,
                                      layers=(model.num_layers,))
                sims: dict = {}
                rows = evaluate_encoders([offline_task(name, suite)], [({"method": label},
                                         StatesEncoder(model, config, pooling))], progress=False, pair_similarities=sims)
                extra = {"pair_similarities": encode_array(next(iter(sims.values())))} if sims else {}
                return rows, {}, extra

            def run(params=params, compute=compute, label=label, name=name):
                frame = pd.DataFrame(load_or_compute(UNTRAINED_EXPERIMENT, params, compute, recompute=recompute)
                                     ["rows"]).assign(method=label)
                if progress:
                    print(f"{label} {name}: {frame['main_score'].mean():.4f}", flush=True)
                return frame

            runs[name, label] = run
    return pd.concat(in_lane_order(runs).values(), ignore_index=True)


# AutoRegEmbed's contrastive baselines (its Figure 3: Lasttoken/Mean x InBatch/HardNeg), trained by repro.training.contrastive
# on the same triplets with the same step budget and batch size
CONTRASTIVE = {  # label -> (repro.training.contrastive model, hard negatives)
    "last token, in-batch": (1, False),
    "last token, in-batch + hard negative": (1, True),
    "mean, in-batch": ("mean", False),
    "mean, in-batch + hard negative": ("mean", True),
}


def contrastive_config(label: str, align: AlignConfig, lr: float = 1e-4) -> "TrainConfig":
    """The contrastive baseline ``label`` on the alignment stage's data: the same triplets (split and
    subset), steps, batch size and seed; LoRA as in Paper 1's trainer, lr 1e-4 (the paper's best for its
    in-batch baselines), max length = the alignment encoder's."""
    from repro.training.contrastive import TrainConfig

    if label not in CONTRASTIVE:
        raise ValueError(f"unknown contrastive baseline '{label}'; valid: {', '.join(CONTRASTIVE)}")
    if align.data != "nli":
        raise ValueError("the contrastive baselines train on the NLI triplets only")
    model, hard = CONTRASTIVE[label]
    return TrainConfig(backbone=align.backbone, model=model, hard_negatives=hard, steps=align.steps,
                       batch_size=align.batch_size, lr=lr, warmup_steps=align.warmup_steps,
                       max_length=align.max_length, validation_triplets=align.validation_triplets,
                       validation_sts_pairs=align.validation_sts_pairs, train_examples=align.train_examples,
                       seed=align.seed, eval_every=align.eval_every, checkpoint_every=align.checkpoint_every)


# the paper's ablations (Table 3, Appendix B, C, E) as changes to the full configuration
ABLATIONS = {
    "full (Eq. 2, sigmoid)": {},
    "without compression": {"compress": None},
    "log-sigmoid": {"squash": "logsigmoid"},
    "KL divergence": {"divergence": "kl"},
    "JS divergence": {"divergence": "js"},
    "tanh": {"squash": "tanh"},
    "reference added (official code)": {"reference_sign": "code"},
    "strategy 1: q as target": {"strategy": 1},
    "strategy 2: q and d+ anchors": {"strategy": 2},
    "strategy 3: + p(d+|e_d+) over p(d-|e_d+)": {"strategy": 3},
    "strategy 4: + p(d-|e_d-) over p(d+|e_d-)": {"strategy": 4},
}


def ablation_config(label: str, base: AlignConfig) -> AlignConfig:
    if label not in ABLATIONS:
        raise ValueError(f"unknown ablation '{label}'; valid: {', '.join(ABLATIONS)}")
    return AlignConfig(**(vars(base) | ABLATIONS[label]))


PAGE_PARAMETERS = {  # the parameters every Paper 3 page shares, with their types (papermill -p checks)
    "profile": str, "backbone": str, "suite": str, "finetune": str, "compress_steps": int, "compress_max_length": int,
    "compress_lr": float, "compress_data": str, "align_steps": int, "align_lr": float, "warmup_steps": int, "batch_size": int,
    "train_examples": int, "validation_examples": int, "validation_sts_pairs": int, "validation_triplets": int, "seed": int,
    "recompute": bool}


def page_configs(**params) -> tuple[CompressConfig, AlignConfig]:
    """A Paper 3 page's parameters (checked: clear errors for wrong types) -> the stage-1 and stage-2 configs."""
    from repro.book.notebook import check_params

    missing = set(PAGE_PARAMETERS) - set(params)
    if missing:
        raise TypeError(f"missing page parameters: {', '.join(sorted(missing))}")
    check_params(**{name: (params[name], PAGE_PARAMETERS[name]) for name in PAGE_PARAMETERS}, tasks=(params.get("tasks"), (list, str), True))
    p = params
    compress = CompressConfig(backbone=p["backbone"], finetune=p["finetune"], steps=p["compress_steps"],
                              batch_size=p["batch_size"], lr=p["compress_lr"], max_length=p["compress_max_length"],
                              validation_examples=p["validation_examples"], warmup_steps=p["warmup_steps"],
                              data=p["compress_data"])
    base = AlignConfig(compress=compress, backbone=p["backbone"], finetune=p["finetune"], steps=p["align_steps"],
                       batch_size=p["batch_size"], lr=p["align_lr"], train_examples=p["train_examples"], seed=p["seed"],
                       validation_sts_pairs=p["validation_sts_pairs"], validation_triplets=p["validation_triplets"],
                       warmup_steps=p["warmup_steps"])
    return compress, base


STAGE1_DESCRIPTION = {"instruction": "instruction examples (T0 + self-instruct, ",
                      "autoencode": "Wikipedia paragraphs, autoencoded (WikiText-2; target = the paragraph's start, "}


def describe_scale(base: AlignConfig, suite: str, contrastive: bool = True) -> str:
    """The scale and deviations line every Paper 3 page prints under its results, built from the configs
    (``contrastive``: also how the contrastive baselines are trained)."""
    from repro.autoregembed.data import split_align
    from repro.autoregembed.objectives import seen_indices
    from repro.core.tasks import describe_suite

    compress = base.compress
    stage1 = (f"Stage 1: {compress.steps} steps x {compress.batch_size} " + STAGE1_DESCRIPTION[compress.data] +
              f"encoder input <= {compress.max_length} tokens, target <= {compress.target_max_length}), lr "
              f"{compress.lr}, gradient norm clipped at {compress.max_grad_norm}. " if compress is not None
              else "No stage 1. ")
    train_rows, _ = split_align(base)
    drawn = len(seen_indices(len(train_rows), base))
    line = (f"Scale: backbone {base.backbone} ({base.finetune} fine-tuning of the encoder; the decoder is the frozen "
            f"original). {stage1}Stage 2: {base.steps} steps x {base.batch_size} "
            f"{'SNLI' if base.data == 'nli' else 'MEDI-NLI'} triplets ({drawn} distinct "
            f"of {len(train_rows)} training triplets drawn), lr {base.lr} ({base.warmup_steps} warm-up steps, "
            f"{base.schedule}, gradient norm clipped at {base.max_grad_norm}), beta {base.beta}, tau "
            f"{base.temperature}, seed {base.seed}. ")
    if contrastive and base.data == "nli":
        t = contrastive_config(next(iter(CONTRASTIVE)), base)
        line += (f"Contrastive baselines: the same triplets, steps, batch size and seed, but LoRA (r {t.lora_r}) "
                 f"instead of full fine-tuning, lr {t.lr}, {t.warmup_steps} warm-up steps, {getattr(t, 'schedule', 'linear')} "
                 f"schedule, InfoNCE at temperature {t.temperature} (Paper 1's trainer). ")
    return line + (
        f"Evaluated on the '{suite}' suite (caps {describe_suite(suite)}). Deviations from the paper: "
        f"{base.backbone} instead of LLaMA2-7B, "
        f"{'SNLI triplets' if base.data == 'nli' else 'a sample of MEDI-NLI'} instead of 50k MEDI-NLI triplets, "
        f"{'T0/self-instruct' if compress is None or compress.data == 'instruction' else 'WikiText-2 autoencoding'} "
        "instead of PWC for stage 1, steps instead of epochs, a stage-1 lr ten times the official 1e-5 (at "
        "2e-5 a few hundred steps barely lower the reconstruction loss, at 5e-4 it diverges: "
        "scripts/p3_stage1_lr_probe.py), MS MARCO and SCIDOCS are not offline (SciFact and NFCorpus "
        "instead).")


def steps_for(examples: int, epochs: float, batch_size: int) -> int:
    """Optimizer steps for ``epochs`` passes over ``examples`` triplets (at least one step)."""
    return max(1, round(epochs * examples / batch_size))


def method_scores(align: AlignConfig, suite: str = "compact", tasks: Sequence[str] | None = None,
                  methods: Sequence[str] | None = None, recompute: bool = False, progress: bool = False) -> pd.DataFrame:
    """Per-task scores (column ``method``) of Table 1/2's methods: the untrained backbone (last token, mean,
    PromptEOL), the contrastive baselines on the same triplets, compression only, and AutoRegEmbed."""
    from repro.pooling_attention.trained import evaluate_trained

    tasks = list(tasks) if tasks is not None else STS_TASKS + RETRIEVAL_TASKS
    every = [*UNTRAINED, *CONTRASTIVE, "compression only", "AutoRegEmbed"]
    methods = list(methods) if methods is not None else every
    unknown = set(methods) - set(every)
    if unknown:
        raise ValueError(f"unknown method(s) {sorted(unknown)}; valid: {', '.join(every)}")
    frames = []
    if set(methods) & set(UNTRAINED):
        frames.append(evaluate_untrained(align.backbone, suite, tasks, progress=progress, recompute=recompute,
                                         labels=[label for label in UNTRAINED if label in methods]))
    runs = {}
    for label in methods:
        if label in CONTRASTIVE:
            runs[label] = lambda label=label: evaluate_trained(contrastive_config(label, align), suite, tasks,
                                                               progress=progress, recompute=recompute)
        elif label == "compression only" and align.compress is not None:
            runs[label] = lambda: evaluate_autoreg(align.compress, suite, tasks, progress=progress,
                                                   recompute=recompute)
        elif label == "AutoRegEmbed":
            runs[label] = lambda: evaluate_autoreg(align, suite, tasks, progress=progress, recompute=recompute)
    frames += [frame.assign(method=label) for label, frame in in_lane_order(runs).items()]
    return pd.concat(frames, ignore_index=True)


def method_training_curves(align: AlignConfig, methods: Sequence[str] | None = None, rolling: int = 10):
    """The stored training curves of Table 1/2's trained methods: ``(autoreg, contrastive)``, the AutoRegEmbed
    stages' frame (:func:`repro.training.curves.autoreg_training_curves`; stage 1 for "compression only" or
    "AutoRegEmbed") and the contrastive baselines' (:func:`repro.training.curves.training_curves`, column
    ``model`` = the baseline's label), each None when no such method is asked for."""
    from repro.training.curves import autoreg_training_curves, training_curves

    methods = list(methods) if methods is not None else [*CONTRASTIVE, "compression only", "AutoRegEmbed"]
    runs = {}
    if align.compress is not None and {"compression only", "AutoRegEmbed"} & set(methods):
        runs["stage 1 (compression)"] = align.compress
    if "AutoRegEmbed" in methods:
        runs["AutoRegEmbed (stage 2)"] = align
    autoreg = autoreg_training_curves(runs, rolling) if runs else None
    baselines = [label for label in methods if label in CONTRASTIVE]
    contrastive = (pd.concat([training_curves([contrastive_config(label, align)], rolling).assign(model=label)
                              for label in baselines], ignore_index=True) if baselines else None)
    return autoreg, contrastive


def sts_average(frame: pd.DataFrame) -> float:
    """Mean STS main score x100 (a task's subsets averaged first)."""
    sts = frame[frame.category == "STS"]
    return float(sts.groupby("task")["main_score"].mean().mean() * 100) if len(sts) else float("nan")


def data_efficiency_configs(base: AlignConfig, sizes: Sequence[int], seeds: Sequence[int],
                            epochs: float) -> dict[tuple[int, int], AlignConfig]:
    """(training-set size, seed) -> the stage-2 configuration: ``epochs`` passes over the seeded subset of
    ``size`` triplets (steps = epochs x size / batch); stage 1 is shared (trained once, its own seed)."""
    for name, values in (("sizes", sizes), ("seeds", seeds)):
        if not values or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
            raise ValueError(f"{name} must be a non-empty list of integers, got {values!r}")
        if len(set(values)) != len(values):
            raise ValueError(f"{name} has duplicates: {values!r}")
    if min(sizes) < 1:  # 0 would mean "every triplet" to the training config
        raise ValueError(f"sizes must be positive (a number of training triplets), got {sizes!r}")
    if isinstance(epochs, bool) or not isinstance(epochs, (int, float)) or not epochs > 0:
        raise ValueError(f"epochs must be a positive number, got {epochs!r}")
    return {(size, seed): AlignConfig(**(vars(base) | {"train_examples": size, "seed": seed,
                                                       "steps": steps_for(size, epochs, base.batch_size)}))
            for size in sizes for seed in seeds}


def data_efficiency_schedule(base: AlignConfig, sizes: Sequence[int], epochs: float) -> pd.DataFrame:
    """Per training-set size: the optimizer steps every method takes and whether the warm-up ends within them
    (with fewer steps than warm-up steps the learning rate never reaches its peak, for every method alike; the
    warm-up is linear from 0 at step 0, as transformers' schedulers do)."""
    rows = []
    for size in sizes:
        steps = steps_for(size, epochs, base.batch_size)
        rows.append({"training triplets": size, "steps": steps, "warm-up steps": base.warmup_steps,
                     "peak lr reached": steps > base.warmup_steps,
                     "highest lr used / peak": min(1.0, (steps - 1) / base.warmup_steps) if base.warmup_steps else 1.0})
    return pd.DataFrame(rows).set_index("training triplets")


def data_efficiency_scores(base: AlignConfig, sizes: Sequence[int], seeds: Sequence[int], epochs: float,
                           methods: Sequence[str], suite: str = "compact", tasks: Sequence[str] | None = None,
                           recompute: bool = False) -> pd.DataFrame:
    """STS average per method x training-set size x seed (:func:`data_efficiency_configs`)."""
    from repro.pooling_attention.trained import evaluate_trained

    tasks = list(tasks) if tasks is not None else STS_TASKS
    def run(method: str, align: AlignConfig) -> pd.DataFrame:
        if method == "AutoRegEmbed":
            return evaluate_autoreg(align, suite, tasks, progress=False, recompute=recompute)
        return evaluate_trained(contrastive_config(method, align), suite, tasks, progress=False, recompute=recompute)

    configs = data_efficiency_configs(base, sizes, seeds, epochs)
    frames = in_lane_order({(method, size, seed): lambda method=method, align=align: run(method, align)
                            for (size, seed), align in configs.items() for method in methods})
    return pd.DataFrame([{"method": method, "examples": size, "seed": seed, "steps": configs[size, seed].steps,
                          "STS average": sts_average(frame)} for (method, size, seed), frame in frames.items()])


REFERENCES = [*UNTRAINED, "compression only"]  # methods that train on no triplets: Figure 3's flat lines


def data_efficiency_references(base: AlignConfig, references: Sequence[str], suite: str = "compact",
                               tasks: Sequence[str] | None = None, recompute: bool = False) -> pd.Series:
    """STS average of each reference method (trained on no triplet: the untrained backbone's methods and
    compression only, i.e. AutoRegEmbed before stage 2) on the data-efficiency page's tasks, by label.
    ``.attrs["compression only weights"]``: the digest of the weights compression only was scored from."""
    unknown = set(references) - set(REFERENCES)
    if unknown:
        raise ValueError(f"unknown reference(s) {sorted(unknown)}; valid: {', '.join(REFERENCES)}")
    if "compression only" in references and base.compress is None:
        raise ValueError("'compression only' needs a stage 1 (this configuration has none)")
    if not references:
        return pd.Series(dtype=float, name="STS average")
    scores = method_scores(base, suite, list(tasks) if tasks is not None else STS_TASKS, references,
                           recompute=recompute)
    series = pd.Series({label: sts_average(scores[scores.method == label]) for label in references},
                       name="STS average")
    if "compression only" in references:
        series.attrs["compression only weights"] = scores.loc[scores.method == "compression only",
                                                              "weights_sha256"].iloc[0]
    return series


def grid_label(temperature: float, beta: float) -> str:
    """The variant label of one temperature x beta cell of the ablation grid (1 and 1.0 name one cell)."""
    return f"tau={float(temperature)}, beta={float(beta)}"


def grid_cells(labels) -> dict[str, tuple[float, float]]:
    """The grid cells among variant ``labels`` (:func:`grid_label`'s), each with its (temperature, beta)."""
    cells = {}
    for label in labels:
        match = re.fullmatch(r"tau=([0-9.e+-]+), beta=([0-9.e+-]+)", str(label))
        if match:
            cells[label] = (float(match[1]), float(match[2]))
    return cells


def ablation_configs(base: AlignConfig, labels: Sequence[str], temperatures: Sequence[float],
                     betas: Sequence[float]) -> dict[str, AlignConfig]:
    """variant label -> stage-2 configuration: the named ablations, then the temperature x beta grid."""
    configs = {label: ablation_config(label, base) for label in labels}
    for temperature in temperatures:
        for beta in betas:
            configs[grid_label(temperature, beta)] = AlignConfig(**(vars(base) | {"temperature": temperature,
                                                                                       "beta": beta}))
    return configs


def ablation_scores(base: AlignConfig, labels: Sequence[str], temperatures: Sequence[float], betas: Sequence[float],
                    suite: str = "compact", tasks: Sequence[str] | None = None,
                    recompute: bool = False) -> pd.DataFrame:
    """Per-task scores (column ``variant``; the grid's also ``temperature`` and ``beta``) of
    :func:`ablation_configs`, plus compression only (without alignment)."""
    tasks = list(tasks) if tasks is not None else STS_TASKS
    configs = ablation_configs(base, labels, temperatures, betas)
    runs = {label: configs[label] for label in labels}
    if base.compress is not None and "without alignment (compression only)" not in labels:
        runs["without alignment (compression only)"] = base.compress
    grid = {variant: config for variant, config in configs.items() if variant not in labels}  # tau x beta
    frames = in_lane_order({variant: lambda config=config: evaluate_autoreg(config, suite, tasks, progress=False,
                                                                            recompute=recompute)
                            for variant, config in (runs | grid).items()})
    return pd.concat([frame.assign(variant=variant, **({"temperature": grid[variant].temperature,
                                                       "beta": grid[variant].beta} if variant in grid else {}))
                      for variant, frame in frames.items()], ignore_index=True)


# The paper's numbers, quoted (never computed here). Source: AutoRegEmbed (arXiv 2502.11401) Tables 1 and 3
# and Figure 1, LLaMA2-7B unless named, STS = Spearman x100 averaged over 10 STS datasets; as summarised in
# ../shared/papers/official-code-notes.md and the paper review in ../shared/papers/.
PAPER_SOURCE = "quoted from the AutoRegEmbed paper (arXiv 2502.11401), LLaMA2-7B, average of 10 STS datasets"
PAPER_TABLE = {
    "last token (untrained LLaMA2-7B)": 56.91,
    "compression only": 73.90,
    "AutoRegEmbed (50k MEDI-NLI triplets)": 83.24,
    "in-batch contrastive, same 50k triplets (LLaMA2-inbatch-M)": 81.53,
}
PAPER_ABLATIONS = {
    "full (Eq. 2, sigmoid)": 83.24,
    "without alignment (compression only)": 73.90,
    "log-sigmoid": 82.93,
    "KL divergence": 79.82,
    "JS divergence": 79.02,
}
PAPER_PARETO = [  # (model, training examples, STS average)
    ("AutoRegEmbed (NLI)", 50_000 + 16_382, 83.24),
    ("AutoRegEmbed (BGE)", 274_951 + 16_382, 84.59),
    ("in-batch contrastive (same NLI data)", 50_000, 81.53),
    ("NV-Embed", 1_054_000, 82.84),
    ("LLM2Vec-Mistral (unsupervised)", 160_000, 78.50),
    ("LLM2Vec-Mistral (supervised)", 544_000, 84.01),
]


PAPER_PARETO_SOURCE = ("quoted from the AutoRegEmbed paper's Figure 1 (arXiv 2502.11401): STS average over its 10 STS "
                       "datasets, 7B-scale models; AutoRegEmbed's training examples include its 16,382 stage-1 (PwC) "
                       "examples")


def pareto_front(points: pd.DataFrame, x: str = "examples", y: str = "STS average") -> pd.Series:
    """True for the points no other point dominates (no more training examples and a higher STS average, or
    fewer examples and no lower average)."""
    xs, ys = points[x].to_numpy(), points[y].to_numpy()
    return pd.Series([not any((xs <= xs[i]) & (ys >= ys[i]) & ((xs < xs[i]) | (ys > ys[i])))
                      for i in range(len(points))], index=points.index)


def config_from_arguments(args: dict) -> CompressConfig | AlignConfig:
    """A stage-1 or stage-2 configuration from flat ``--option`` values (stage 1 options prefixed compress_)."""
    stage = args.pop("stage")
    compress = {f.name: args.pop(f"compress_{f.name}") for f in fields(CompressConfig)}
    for name in ("backbone", "finetune", "compression_tokens"):  # shared; stage 1 keeps its own seed
        compress[name] = args[name]
    compress_config = CompressConfig(**compress)
    if stage == "compress":
        return compress_config
    without = args.pop("no_compression")
    return AlignConfig(compress=None if without else compress_config, **args)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from repro.training.cli import argument_type

    parser.add_argument("--stage", choices=("compress", "align"), default="align")
    parser.add_argument("--no-compression", action="store_true", help="stage 2 from the raw backbone (ablation)")
    for f in fields(AlignConfig):
        if f.name != "compress":
            parser.add_argument(f"--{f.name.replace('_', '-')}", type=argument_type(f.default), default=f.default)
    for f in fields(CompressConfig):
        if f.name not in ("backbone", "finetune", "compression_tokens"):
            parser.add_argument(f"--compress-{f.name.replace('_', '-')}", dest=f"compress_{f.name}",
                                type=argument_type(f.default), default=f.default)
    for name in ("backbone", "finetune", "compression_tokens"):
        parser.set_defaults(**{f"compress_{name}": None})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.add_argument("--suite", default="compact")
    parser.add_argument("--tasks", nargs="*")
    parser.add_argument("--untrained", action="store_true", help="score the untrained baselines instead")
    args = vars(parser.parse_args(argv))
    suite, tasks = args.pop("suite"), args.pop("tasks")
    if args.pop("untrained"):
        frame = evaluate_untrained(args["backbone"], suite, tasks)
        print(frame.groupby(["method", "task"])["main_score"].mean().to_string())
        return
    frame = evaluate_autoreg(config_from_arguments(args), suite, tasks)
    print(frame.groupby("task")["main_score"].mean().to_string())


if __name__ == "__main__":
    main()
