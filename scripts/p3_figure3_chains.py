"""Train and score Figure 3 on the independent chains (resumable; stored results are skipped): the data-efficiency
page's standard parameters (sizes, epochs, methods, suite, tasks, stage 2), each chain's AutoRegEmbed from its own
stage 1, the contrastive baselines at the chain's seed, compression only from the weights the chain's runs started
from (``repro.autoregembed.experiments.chain_efficiency``).

    OMP_NUM_THREADS=1 .venv/bin/python scripts/p3_figure3_chains.py --seeds 2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from repro.autoregembed.experiments import chain_efficiency, independent  # noqa: E402
from repro.autoregembed.experiments.configs import page_configs  # noqa: E402
from repro.pages.parameters import page_parameters  # noqa: E402

PAGE = "p3_data_efficiency"


def page_setting() -> dict:
    """The page's standard parameters, with its stage-2 configuration as ``base``."""
    params = page_parameters(PAGE, "standard")
    _, base = page_configs(**params)
    return {"page_base": base, "sizes": params["sizes"], "epochs": params["epochs"], "methods": params["methods"],
            "suite": params["suite"], "tasks": params["tasks"]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(independent.SEEDS))
    args = parser.parse_args(argv)
    chain_efficiency.run(args.seeds, **page_setting())


if __name__ == "__main__":
    main()
