"""The stage-1 and stage-2 configurations of a Paper 3 page, from its parameters."""

from __future__ import annotations

from repro.autoregembed.config import AlignConfig, CompressConfig


def page_configs(*, backbone: str, finetune: str, compress_steps: int, compress_max_length: int, compress_lr: float,
                 compress_data: str, align_steps: int, align_lr: float, warmup_steps: int, batch_size: int,
                 train_examples: int, validation_examples: int, validation_sts_pairs: int, validation_triplets: int,
                 seed: int, template: str = "book", **page) -> tuple[CompressConfig, AlignConfig]:
    """A Paper 3 page's stage parameters -> the stage-1 and stage-2 configs (the page's other parameters, in
    ``page``, are not the stages'; ``template``: how the encoder's inputs are written, "book" for the runs the pages
    show). The pages check their parameters' types first (``repro.book.notebook.check_page``)."""
    compress = CompressConfig(backbone=backbone, finetune=finetune, steps=compress_steps, batch_size=batch_size,
                              lr=compress_lr, max_length=compress_max_length, validation_examples=validation_examples,
                              warmup_steps=warmup_steps, data=compress_data, template=template)
    base = AlignConfig(compress=compress, backbone=backbone, finetune=finetune, steps=align_steps,
                       batch_size=batch_size, lr=align_lr, train_examples=train_examples, seed=seed,
                       validation_sts_pairs=validation_sts_pairs, validation_triplets=validation_triplets,
                       warmup_steps=warmup_steps, template=template)
    return compress, base


STAGE1_DESCRIPTION = {"instruction": "instruction examples (T0 + self-instruct, ",
                      "autoencode": "Wikipedia paragraphs, autoencoded (WikiText-2; target = the paragraph's start, "}


def steps_for(examples: int, epochs: float, batch_size: int) -> int:
    """Optimizer steps for ``epochs`` passes over ``examples`` triplets (at least one step)."""
    return max(1, round(epochs * examples / batch_size))
