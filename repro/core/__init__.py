"""The core every paper builds on: backbones (GGUF packages dequantized to fp32, hidden states of every layer from one
forward, never ``lm_head``), encoding with packing and cached states, the task files and suites, mteb's evaluators,
the Embedder a user encodes with, the statistics primitives (``stats``: Wilcoxon, bootstraps) and the per-unit data
paired tests read (``paired``); the verdict engine that decides with them is ``repro.verdicts``. It may import
``store`` only: never the verdict engine, training, a paper, the cross-paper pages or the book
(``tests/test_layout.py``)."""
