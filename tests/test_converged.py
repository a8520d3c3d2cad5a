"""Verdicts over seeds respect the seed spread (Paper 1 under the budget rule)."""

import numpy as np
import pandas as pd

from repro.pooling_attention.converged import seed_spread, seeded_claims


def _frame(offsets: dict, seeds=(0, 1, 2), noise=None, tasks=12):
    rng = np.random.default_rng(0)
    rows = []
    for model, offset in offsets.items():
        for seed in seeds:
            shift = 0.0 if noise is None else noise[model][seed]
            for t in range(tasks):
                rows.append({"model": model, "seed": seed, "task": f"t{t}", "category": "STS",
                             "score": 50 + t + offset + shift + rng.normal(0, 0.05)})
    return pd.DataFrame(rows)


def test_a_consistent_gap_beyond_the_spread_is_supported_and_one_within_it_is_inconclusive():
    tight = {1: [0.0, 0.1, -0.1], 5: [0.0, 0.1, -0.1]}
    frame = _frame({1: 0.0, 5: 3.0}, noise=tight)
    spread = seed_spread(frame)
    assert spread.loc[1, "seeds"] == 3 and spread.loc[5, "all tasks"] < 0.2
    claim = ("model 5 beats model 1", 5, 1, None, "better")
    assert seeded_claims(frame, [claim]).iloc[0]["verdict at our scale"] == "supported"
    # the same 3-point gap, but seeds scatter by ~5 points: inconclusive, whatever the Wilcoxon says
    wide = {1: [0.0, 5.0, -5.0], 5: [0.0, 5.0, -5.0]}
    noisy = seeded_claims(_frame({1: 0.0, 5: 3.0}, noise=wide), [claim]).iloc[0]
    assert noisy["verdict at our scale"] == "inconclusive (within the seed spread)" and noisy["seed spread"] > 3
    # one seed: the verdict says the spread is unknown
    single = seeded_claims(_frame({1: 0.0, 5: 3.0}, seeds=(0,)), [claim]).iloc[0]
    assert single["verdict at our scale"] == "supported (one seed: spread unknown)" and single["seeds"] == 1
