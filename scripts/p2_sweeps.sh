#!/usr/bin/env bash
# EmbedFilter sweeps (Paper 2) for the book's pages; resumable per task (rerun to continue).
# Each backbone x prompt is encoded once per task; every ratio, filter type and baseline comes from the cached states,
# and the official scoring protocol is stored beside mteb's from the same states.
# Tasks: every task of the suite (default: all 19 at `compact` caps); TOKENIZATION=official (the default) is
# EmbedFilter's official tokenization, TOKENIZATION=pieces the book's earlier runs.
#   OMP_NUM_THREADS=1 nohup scripts/p2_sweeps.sh qwen2.5-coder-0.5b:prompteol gemma3-270m:echo > logs/p2_a.log 2>&1 &
#   TASKS="STSBenchmark STS17" scripts/p2_sweeps.sh smollm2-135m:echo
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${SUITE:-compact}
tokenization=${TOKENIZATION:-official}
runs=("${@:-smollm2-135m:prompteol smollm2-135m:echo gemma3-270m:prompteol gemma3-270m:echo qwen2.5-coder-0.5b:prompteol qwen2.5-coder-0.5b:echo}")
for run in ${runs[@]}; do
  backbone=${run%%:*}
  prompt=${run##*:}
  # stored per task: a killed sweep resumes at the first missing task
  for protocol in mteb official; do
    .venv/bin/python -m repro.embedfilter.sweep --backbone "$backbone" --prompt "$prompt" --suite "$suite" \
      --tokenization "$tokenization" --protocol "$protocol" ${TASKS:+--tasks $TASKS}
  done
done
