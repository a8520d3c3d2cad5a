#!/usr/bin/env bash
# Paper 3's runs for the book's pages (resumable: every run checkpoints, every score is stored per task; rerun
# to continue). Each step is the page itself executed with --compute-pending, so the runs have exactly the
# page's parameters, by two processes that split its runs (--lanes 2, repro.store.lanes: each lane one thread; a
# run one lane holds, such as the shared stage 1, is waited for by the other, never trained twice).
#   nohup scripts/p3_runs.sh > logs/p3.log 2>&1 &
#   scripts/p3_runs.sh p3_ablations           # one page
#   PROFILE=smoke scripts/p3_runs.sh          # the same steps at the smoke scale (minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${PROFILE:-standard}
lanes=${LANES:-2}
pages=("${@:-p3_tables p3_data_efficiency p3_ablations}")
for name in ${pages[@]}; do
  .venv/bin/python -m repro.book.build --profile "$profile" --no-site --compute-pending --lanes "$lanes" --only "$name"
done
.venv/bin/python -m repro.book.build --profile "$profile" --no-site --compute-pending --only p3_summary
