"""The ``repro`` command: one entry point over the library's command lines.

    repro build [--profile smoke] [--only PAGE -p name=value]   the book (papermill -> jupyter-book)
    repro train --model 5 --steps 150 --suite compact          train and score one contrastive model (Paper 1)
    repro autoreg --stage align --steps 150 --suite compact    train and score one AutoRegEmbed stage (Paper 3)
    repro embedfilter --backbone B --prompt echo --suite S     the EmbedFilter sweep (Paper 2)
    repro layerwise --backbone B --suite S                     per-layer scores (Paper 1, Figure 2)
    repro evaluate --recipe R --suite compact [--tasks ...]    score a named recipe (stored per task)
    repro harness --suite full                                 the harness check: all-MiniLM-L6-v2 vs MTEB's scores
    repro objective-cost ...                                   memory and time of alignment vs InfoNCE
    repro report                                               markdown tables of the stored results
    repro recipes                                              the named recipes (repro.from_recipe) and their scores
    repro encode --recipe R --input texts.txt --output emb.npy encode a file of texts with a named recipe
    torchrun --nproc-per-node 2 -m repro encode ...            the same, across 2 processes
    repro export RECIPE FOLDER                                 a recipe as a sentence-transformers folder
    repro export-results --reference --output DIR              stored scores as mteb results (mteb.ResultCache)
    repro ship-weights BACKBONE p1-model1 --seed S             ship a trained recipe's adapter and head (fp16)

``repro COMMAND --help`` gives each command's options. The command line works offline (``HF_HUB_OFFLINE=1``
unless set) and logs at INFO level. A bad input (an unknown name, a value of the wrong type, a missing file) is one
line on stderr and exit status 1; ``REPRO_DEBUG=1`` shows its traceback.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys

from repro.crosspaper.registry import papers
from repro.store.paths import offline

# what a user's input raises (an unknown page, task or recipe, a parameter of the wrong type, a missing or unreadable
# file); anything else is a bug and keeps its traceback
INPUT_ERRORS = (ValueError, TypeError, FileNotFoundError, NotADirectoryError, UnicodeDecodeError, KeyError)

COMMANDS = {  # name -> module whose main(argv) runs it (or "module:function"); each paper's come from the registry
    "build": "repro.book.build",
    "train-only": "repro.training.contrastive",
    **{name: target for paper in papers() for name, target in paper.commands},
    "evaluate": "repro.recipes.recipes:evaluate_main",
    "harness": "repro.core.reference",
    "report": "repro.book.report",
    "recipes": "repro.recipes.recipes",
    "encode": "repro.recipes.recipes:encode_main",
    "screenshot": "repro.book.screenshot",
    "export": "repro.recipes.export",
    "export-results": "repro.recipes.mteb_format",
    "ship-weights": "repro.recipes.shipped",
}


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        print("commands:", ", ".join(COMMANDS))
        return
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        sys.exit(f"repro: unknown command '{name}'; valid: {', '.join(COMMANDS)}")
    offline()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    module, _, function = COMMANDS[name].partition(":")
    command = getattr(importlib.import_module(module), function or "main")
    try:
        command(rest)
    except INPUT_ERRORS as error:  # a bad name, value, type or file: one line, no traceback (REPRO_DEBUG=1 shows it)
        if os.environ.get("REPRO_DEBUG"):
            raise
        sys.exit(f"repro {name}: {error}")


if __name__ == "__main__":
    main()
