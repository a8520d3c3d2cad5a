"""Pooling and Attention (Tang & Yang, arXiv 2409.02727): which layer's state is a good embedding (``layerwise``,
``layer_similarity``), the five designs (EOS vs trainable vs multi-layer trainable pooling; causal vs bidirectional
attention) trained under the budget rule (``trained``, ``converged``), and the paper's claims. A paper's room: it uses
``core``, ``store`` and ``training``, never another paper or the book."""
