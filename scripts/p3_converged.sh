#!/usr/bin/env bash
# Paper 3 under the declared budget rule (page p3_converged), in the order its pieces depend on each other:
# the declared dev search of each side (stage 1 first, then 3 learning rates, then JS and LoRA / last token and
# tau 0.02 at the dev-best rate), then the dev-selected configurations at seeds 0-2 on compact, seed 0's budget
# points on small, and compression only from the stage 1 those runs started from (each also on the leaderboard's
# 19 compact tasks), then EmbedFilter on AutoRegEmbed's seed-0 encoder (the leaderboard's combination).
# Everything resumes and skips what is stored; run folders are not committed, so a session that trains a run
# should also score it. SIDES="baseline" scripts/p3_converged.sh runs one side only.
#   scripts/p3_converged.sh                 # smollm2-135m, both sides
# Beside another long run: OMP_NUM_THREADS=1 for each (see benchmarks/lanes.py and scripts/p1_converged.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
backbone=${BACKBONE:-smollm2-135m}
sides=${SIDES:-autoregembed baseline}
for side in $sides; do
  .venv/bin/python -m repro.autoregembed.experiments.search --side "$side" --backbone "$backbone"
done
.venv/bin/python -m repro.autoregembed.experiments.converged --backbone "$backbone" --sides $sides --budget-points
# the leaderboard's combination "EmbedFilter on AutoRegEmbed's encoder", from seed 0's run while it is on this machine
if [[ " $sides " == *" autoregembed "* && "$backbone" == smollm2-135m ]]; then
  .venv/bin/python -m repro.crosspaper.combinations --autoregembed
fi
