"""AutoRegEmbed (Deng et al., arXiv 2502.11401): embeddings that follow the autoregressive nature of an LLM.

* **Stage 1, information compression.** ``k`` compression tokens (trainable input embeddings, like new
  vocabulary rows) are appended to ``context \\n instruction \\n``; the trainable encoder's final (post-norm)
  states at those ``k`` positions are prepended, as input embeddings and without projection, to the
  target's token embeddings and fed to a **frozen copy of the original backbone**, which must reproduce
  ``target + EOS`` (cross-entropy on the target tokens only).
* **Stage 2, conditional distribution alignment.** Encoder initialised from stage 1, decoder = the frozen
  original backbone. With ``a = log p(d+|e_q)``, ``b = log p(d-|e_q)``, ``c = log p(d+|e_d+)`` (summed
  log-probabilities of a target given a compression memory) and reference scores from the stage-1
  model (computed once, before training, and cached in the run folder)::

      S1 = -f(beta * |a - c|)
      S2 = -f(beta * [(a - ref_a) - (b - ref_b)])      (paper; the official code adds the reference
                                                       difference: (a - b) + (ref_a - ref_b))
      loss = -log( e^{S1/tau} / (e^{S1/tau} + sum e^{S2/tau}) )

  ``f`` = sigmoid (paper), tanh or log-sigmoid; S1's distance can be replaced by the KL or JS divergence of
  the decoder's next-token distributions along ``d+`` (the paper's loss variants); ``strategy`` 1–4 are the
  appendix's alternative alignment strategies (see :func:`alignment_scores`).
* **Inference**: the mean of the ``k`` compression-token states, L2-normalised (cosine = inner product).

Both stages train through :func:`repro.training.loop.run_training` (accelerate, checkpoints, resume): one loop for
every objective of the project.
"""
