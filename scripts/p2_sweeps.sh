#!/usr/bin/env bash
# EmbedFilter sweeps (Paper 2) for the book's pages; resumable per task (rerun to continue).
# Each backbone x prompt is encoded once per task; every ratio, filter type and baseline comes from the cached states.
# Tasks: the 9 STS sets for every run, plus SciFact for PromptEOL runs (the dimension-vs-cost page's retrieval task).
#   OMP_NUM_THREADS=1 nohup scripts/p2_sweeps.sh qwen2.5-coder-0.5b:prompteol gemma3-270m:echo > logs/p2_a.log 2>&1 &
#   TASKS="STSBenchmark STS17" scripts/p2_sweeps.sh smollm2-135m:echo
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${SUITE:-compact}
sts="STSBenchmark SICK-R BIOSSES STS12 STS13 STS14 STS15 STS16 STS17"
runs=("${@:-gemma3-270m:prompteol smollm2-135m:echo qwen2.5-coder-0.5b:prompteol gemma3-270m:echo qwen2.5-coder-0.5b:echo}")
for run in ${runs[@]}; do
  backbone=${run%%:*}
  prompt=${run##*:}
  tasks=$sts
  if [ "$prompt" != echo ]; then tasks="$tasks SciFact"; fi
  tasks=${TASKS:-$tasks}
  # stored per task: a killed sweep resumes at the first missing task
  .venv/bin/python -m repro.embedfilter.sweep --backbone "$backbone" --prompt "$prompt" --suite "$suite" --tasks $tasks
done
