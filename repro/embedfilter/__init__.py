"""EmbedFilter (arXiv 2606.07502): the final hidden state projected through rows of ``Vh`` from the SVD of
``lm_head.weight`` (``filters``), applied to cached PromptEOL and Echo states; the sweep over backbones, prompts and
ratios (``sweep``), vocabulary-space probes (``vocab_lens``), the cost of fewer dimensions, the paper's quoted
numbers and its claims. A paper's room: it uses ``core``, ``store`` and ``training``, never another paper or the book."""
