"""What a page says about the runs it shows: which stage-1 weights the stage-2 runs start from, and the scale
line (backbone, data, steps, baselines' settings)."""

from __future__ import annotations

from collections.abc import Sequence

from repro.autoregembed.config import AlignConfig
from repro.autoregembed.data import split_align
from repro.autoregembed.experiments.baselines import CONTRASTIVE, contrastive_config
from repro.autoregembed.experiments.configs import STAGE1_DESCRIPTION
from repro.autoregembed.objectives import seen_indices
from repro.autoregembed.train import RUNS_EXPERIMENT, run_params
from repro.core.suites import suite_caps_text
from repro.store.results import load_result, params_key


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


DATA_NAMES = {"nli": "SNLI", "nli-medi": "SNLI + MEDI-NLI"}  # stage 2's training data, as the scale line names it
DEVIATION_DATA = {"nli": "SNLI triplets", "nli-medi": "SNLI triplets and a sample of MEDI-NLI"}


TEMPLATE_DEVIATION = {  # how the encoder's inputs are written (repro.autoregembed.config.TEMPLATES)
    "book": "the book's input template instead of the official code's (a straight quote ending the instruction, "
            "BOS only where the tokenizer adds one, which SmolLM2's does not, the text's head and tail kept, and the "
            "training newline before the compression tokens kept at inference; the official code ends it with a curly "
            "quote, always puts BOS first, cuts on the right and leaves the newline out at inference), ",
    "official": "inputs written as the official code writes them (curly quote, BOS first, cut on the right, no "
                "newline before the compression tokens at inference), ",
}


def describe_scale(base: AlignConfig, suite: str, contrastive: bool = True) -> str:
    """The scale and deviations line every Paper 3 page prints under its results, built from the configs
    (``contrastive``: also how the contrastive baselines are trained)."""

    compress = base.compress
    stage1 = (f"Stage 1: {compress.steps} steps x {compress.batch_size} " + STAGE1_DESCRIPTION[compress.data] +
              f"encoder input <= {compress.max_length} tokens, target <= {compress.target_max_length}), lr "
              f"{compress.lr}, gradient norm clipped at {compress.max_grad_norm}. " if compress is not None
              else "No stage 1. ")
    train_rows, _ = split_align(base)
    drawn = len(seen_indices(len(train_rows), base))
    by_dev = base.stopping == "dev"
    budget = (f"at most {base.steps} steps (the budget rule's cap; dev-stopped, the dev-best step selected) x"
              if by_dev else f"{base.steps} steps x")
    at_cap = " at the cap" if by_dev else ""
    line = (f"Scale: backbone {base.backbone} ({base.finetune} fine-tuning of the encoder; the decoder is the frozen "
            f"original). {stage1}Stage 2: {budget} {base.batch_size} {DATA_NAMES.get(base.data, 'MEDI-NLI')} "
            f"triplets ({drawn} distinct of {len(train_rows)} training triplets drawn{at_cap}), lr {base.lr} "
            f"({base.warmup_steps} warm-up steps, "
            f"{base.schedule}, gradient norm clipped at {base.max_grad_norm}), beta {base.beta}, tau "
            f"{base.temperature}, seed {base.seed}. ")
    if contrastive and base.data == "nli":
        t = contrastive_config(next(iter(CONTRASTIVE)), base)
        line += (f"Contrastive baselines: the same triplets, steps, batch size and seed, but LoRA (r {t.lora_r}) "
                 f"instead of full fine-tuning, lr {t.lr}, {t.warmup_steps} warm-up steps, {getattr(t, 'schedule', 'linear')} "
                 f"schedule, InfoNCE at temperature {t.temperature} (Paper 1's trainer). ")
    return line + (
        f"Evaluated on the '{suite}' suite ({suite_caps_text(suite)}). Deviations from the paper: "
        f"{base.backbone} instead of LLaMA2-7B, {TEMPLATE_DEVIATION[base.template]}"
        f"{DEVIATION_DATA.get(base.data, 'a sample of MEDI-NLI')} instead of 50k MEDI-NLI triplets, "
        f"{'T0/self-instruct' if compress is None or compress.data == 'instruction' else 'WikiText-2 autoencoding'} "
        "instead of PWC for stage 1, steps instead of epochs, a stage-1 lr ten times the official 1e-5 (at "
        "2e-5 a few hundred steps barely lower the reconstruction loss, at 5e-4 it diverges: "
        "scripts/p3_stage1_lr_probe.py), MS MARCO and SCIDOCS are not offline (SciFact and NFCorpus "
        "instead).")
