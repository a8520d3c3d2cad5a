#!/usr/bin/env bash
# Paper 3's runs for the book's pages (resumable: every run checkpoints, every score is stored per task; rerun
# to continue). Stage 1 (compression) is shared by every page, so it is trained once first; then the Tables and
# data-efficiency pages run in two lanes, then the ablations. Each step is the page itself executed with
# --compute-pending, so the runs have exactly the page's parameters.
#   OMP_NUM_THREADS=1 nohup scripts/p3_runs.sh > logs/p3.log 2>&1 &
#   PROFILE=smoke scripts/p3_runs.sh          # the same steps at the smoke scale (minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${PROFILE:-standard}
page() { .venv/bin/python -m repro.build --profile "$profile" --no-site --compute-pending --only "$@"; }
page p3_tables -p 'methods=["compression only"]'   # trains stage 1 and scores it
page p3_tables &
tables=$!
page p3_data_efficiency
wait "$tables"
page p3_ablations
page p3_summary
