#!/usr/bin/env bash
# #23: the 8-question arm (run.sh) continued from its checkpoint-20 to STEPS (80) on both seeds, each new
# checkpoint evaluated greedy on test and errands (200 tasks) as $OUT/eval/calcb8_sSEED_grpoN.*.json.
# Usage: to80.sh [STEPS]   (after run.sh, same OUT)
set -u
STEPS=${1:-80}
OUT=${OUT:-runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
source "$(dirname "$0")/../calc-evaluate.sh"
source "$(dirname "$0")/../calculator-step.sh"
for seed in 0 1; do
  mcp-rl train --recipe calculator -o "$OUT/calcb8_s$seed" --resume "${CALCULATOR_384[@]}" "${CALCULATOR_8Q[@]}" \
    --set trainer.seed="$seed" --set trainer.max_steps="$STEPS" \
    > "$OUT/calcb8_s${seed}_to$STEPS.log" 2>&1 &
done
for ((n = 30; n <= STEPS; n += 10)); do
  for seed in 0 1; do evaluate_when_saved "calcb8_s${seed}_grpo$n" "$OUT/calcb8_s$seed/checkpoint-$n"; done
done
wait
