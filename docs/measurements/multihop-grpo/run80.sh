#!/usr/bin/env bash
# #23: the search-multihop recipe as it was shipped (its warm start, then the calculator's step) run past its 20
# steps, seeds 0 and 1 side by side from one warm start, checkpoints every 10 steps; greedy evaluation of the
# warm start alone (the lr-0 control) and of checkpoints 10, 20, 30, ... on our world's test split and on
# chronicle.
# Usage: run80.sh [MAX_STEPS]   (OUT defaults to runs/; the warm start at 2 threads, then 1 thread a job)
# Measured (docs/grpo-protocol.md): both seeds stopped after checkpoint 60, then resumed to 70 (time).
set -u
OUT=${OUT:-runs} MAX_STEPS=${1:-80}
export HF_HUB_OFFLINE=1
mkdir -p "$OUT"
# The warm start alone: the recipe's run, stopped once its warm start is written.
OMP_NUM_THREADS=2 mcp-rl train --recipe search-multihop -o "$OUT/mh80_warm" --set trainer.max_steps=1 \
  > "$OUT/mh80_warm.log" 2>&1 &
warm=$!
while [ ! -f "$OUT/mh80_warm/warm_start/final/config.json" ]; do sleep 20; done; sleep 30
kill "$warm"
# Both seeds from copies of it (--resume loads it, does not retrain it), its evaluation and every 10th
# checkpoint's: damp.sh, with the step measured here (the recipe took lr 1e-5 then; it takes 5e-6 now).
"$(dirname "$0")/damp.sh" mh80 "$MAX_STEPS" --set trainer.learning_rate=1e-5
# Sampled, 4 a question at T 0.8, the warm start alone and the last checkpoint evaluated:
#   mcp-rl eval --recipe search-multihop --limit 200 --samples 4 --model M \
#     --output "$OUT/eval/mh80_NAME.test.sampled.json"
