#!/usr/bin/env bash
# Train and evaluate Tang & Yang's five models at the book's standard budget (resumable: rerun to continue).
#   scripts/train_p1_models.sh 1 2 3 4 5                       # Tables 2-4 (smollm2-135m, every compact task)
#   BACKBONE=gemma3-270m TASKS="$(python -c 'from repro.pages.parameters import P1_ROBUSTNESS_TASKS as t; print(*t)')" \
#     scripts/train_p1_models.sh 1 2 3 4 5                     # Table 5 (the page's task list)
#   RECOMPUTE_STALE=1 scripts/train_p1_models.sh 1             # weights lost and retrained (CPU training is not
#                                                              # bit-reproducible across machines): redo the scores
#                                                              # stored from the old weights, keep the rest
set -euo pipefail
cd "$(dirname "$0")/.."
backbone=${BACKBONE:-smollm2-135m}
steps=${STEPS:-150}
models=("${@:-1 2 3 4 5}")
for model in ${models[@]}; do
  .venv/bin/python -m repro.pooling_attention.trained --backbone "$backbone" --model "$model" --steps "$steps" --batch-size 16 \
    --max-length 64 --suite compact ${TASKS:+--tasks $TASKS} ${RECOMPUTE_STALE:+--recompute-stale}
done
