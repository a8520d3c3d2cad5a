"""The core every paper builds on: backbones (GGUF packages dequantized to fp32, hidden states of every layer from one
forward, never ``lm_head``), encoding with packing and cached states, the task files and suites, mteb's evaluators,
the Embedder a user encodes with, and the statistics and verdict rule every page and the ledger share
(``verdicts``, ``run_units``, ``stats``, ``comparison``, ``calibration``). It may import ``store`` only: never a
paper, the training loop's callers, the cross-paper pages or the book (``tests/test_layout.py``)."""
