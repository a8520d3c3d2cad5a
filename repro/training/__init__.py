"""The training loop every trained method shares: contrastive objectives (gathered InfoNCE), LoRA via peft, accelerate,
checkpoints and resume, training data, and the declared budget rule (``budget``: dev-stopped, the curve kept). It
uses ``core`` and ``store``, never a paper, the cross-paper pages or the book."""
