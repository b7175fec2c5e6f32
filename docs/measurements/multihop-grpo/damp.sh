#!/usr/bin/env bash
# #23: damping the search-multihop swing. One arm = one change to the recipe's GRPO step, run from run80.sh's
# warm start (OUT/mh80_warm/warm_start), seeds 0 and 1 side by side at 1 thread each, greedy evaluation of every
# 10th checkpoint on our world's test split and on chronicle, against run80.sh's evaluation of the warm start
# alone (mh80_warm.*, the lr-0 control; evaluated here first if it is not there yet).
# Usage: damp.sh NAME MAX_STEPS [--set key=value ...]   (again with a larger MAX_STEPS to go on from the last
# checkpoint: training resumes, checkpoints already evaluated are skipped)
#   damp.sh mhlr5 40 --set trainer.learning_rate=5e-6
#   damp.sh mhb8 20 --set trainer.learning_rate=1e-5 --set trainer.gradient_accumulation_steps=16 \
#     --set grpo.max_extra_rollouts=64
# (measured when the recipe's step was lr 1e-5, 4 questions a step; the lr is set in both so that they still
# change one thing each against that step.)
set -u
OUT=${OUT:-runs} NAME=$1 MAX_STEPS=$2
shift 2
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
mkdir -p "$OUT/eval"
evaluate() {  # name model; a report already there is kept, so that a longer run only adds checkpoints
  [ -f "$OUT/eval/$1.chronicle.json" ] && return
  mcp-rl eval --recipe search-multihop --limit 200 --model "$2" --output "$OUT/eval/$1.test.json"
  mcp-rl eval --recipe search-multihop --limit 200 --model "$2" --corpus chronicle --qa chronicle \
    --output "$OUT/eval/$1.chronicle.json"
}
for seed in 0 1; do
  mkdir -p "$OUT/${NAME}_s$seed" && cp -rn "$OUT/mh80_warm/warm_start" "$OUT/${NAME}_s$seed/"
  mcp-rl train --recipe search-multihop -o "$OUT/${NAME}_s$seed" --resume --set trainer.seed="$seed" \
    --set trainer.max_steps="$MAX_STEPS" "$@" >> "$OUT/${NAME}_s$seed.log" 2>&1 &
done
evaluate mh80_warm "$OUT/mh80_warm/warm_start/final"
for step in $(seq 10 10 "$MAX_STEPS"); do
  for seed in 0 1; do
    checkpoint=$OUT/${NAME}_s$seed/checkpoint-$step
    while [ ! -f "$checkpoint/trainer_state.json" ]; do sleep 20; done; sleep 15
    evaluate "${NAME}_s${seed}_grpo$step" "$checkpoint"
  done
done
wait
