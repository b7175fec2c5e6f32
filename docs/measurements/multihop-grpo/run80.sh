#!/usr/bin/env bash
# #23: the search-multihop recipe as shipped (its warm start, then the calculator's step) run past its 20
# steps, seeds 0 and 1 side by side from one warm start, checkpoints every 10 steps; greedy evaluation of the
# warm start alone (the lr-0 control) and of checkpoints 10, 20, 30, ... on our world's test split and on
# chronicle.
# Usage: run80.sh [MAX_STEPS]   (OUT defaults to runs/; the warm start at 2 threads, then 1 thread a job)
# Measured (docs/grpo-protocol.md): both seeds stopped after checkpoint 60, then resumed to 70 (time).
set -u
OUT=${OUT:-runs} MAX_STEPS=${1:-80}
export HF_HUB_OFFLINE=1
mkdir -p "$OUT/eval"
evaluate() {  # name model
  mcp-rl eval --recipe search-multihop --limit 200 --model "$2" --output "$OUT/eval/mh80_$1.test.json"
  mcp-rl eval --recipe search-multihop --limit 200 --model "$2" --corpus chronicle --qa chronicle \
    --output "$OUT/eval/mh80_$1.chronicle.json"
}
# The warm start alone: the recipe's run, stopped once its warm start is written.
OMP_NUM_THREADS=2 mcp-rl train --recipe search-multihop -o "$OUT/mh80_warm" --set trainer.max_steps=1 \
  > "$OUT/mh80_warm.log" 2>&1 &
warm=$!
while [ ! -f "$OUT/mh80_warm/warm_start/final/config.json" ]; do sleep 20; done; sleep 30
kill "$warm"
export OMP_NUM_THREADS=1
for seed in 0 1; do  # each from a copy of the warm start (--resume loads it, does not retrain it)
  mkdir -p "$OUT/mh80_s$seed" && cp -r "$OUT/mh80_warm/warm_start" "$OUT/mh80_s$seed/"
  mcp-rl train --recipe search-multihop -o "$OUT/mh80_s$seed" --resume --set trainer.seed="$seed" \
    --set trainer.max_steps="$MAX_STEPS" > "$OUT/mh80_s$seed.log" 2>&1 &
done
evaluate warm "$OUT/mh80_warm/warm_start/final"
for step in $(seq 10 10 "$MAX_STEPS"); do
  for seed in 0 1; do
    checkpoint=$OUT/mh80_s$seed/checkpoint-$step
    while [ ! -f "$checkpoint/trainer_state.json" ]; do sleep 30; done; sleep 20
    evaluate "s${seed}_grpo$step" "$checkpoint"
  done
done
wait
# Sampled, 4 a question at T 0.8, the warm start alone and the last checkpoint evaluated:
#   mcp-rl eval --recipe search-multihop --limit 200 --samples 4 --model M \
#     --output "$OUT/eval/mh80_NAME.test.sampled.json"
