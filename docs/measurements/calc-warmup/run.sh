#!/usr/bin/env bash
# #23: does a learning-rate warm-up remove the calculator's dip at 10 steps? One change against the recipe:
#   const 0   the recipe as shipped (constant lr 1e-5), seed 0, to 10 steps: the dip, reproduced on this CPU
#   warm  S   lr_scheduler_type constant_with_warmup, warmup_steps 10, seeds 0 and 1, to 20 steps
# all from one warm start, whose evaluation alone is the lr-0 control. Greedy, 200 tasks, test and errands.
# Usage: run.sh   (OUT defaults to runs/; about 30 min on the 2-core EPYC of its README)
# The recipe as measured (384 demonstrations, 4 questions x 8 samples a step) is pinned: CALCULATOR_384 of
# ../calculator-step.sh.
set -u
OUT=${OUT:-runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
WARMUP=(--set trainer.lr_scheduler_type=constant_with_warmup --set trainer.warmup_steps=10)
mkdir -p "$OUT/eval"
source "$(dirname "$0")/../calc-evaluate.sh"
source "$(dirname "$0")/../calculator-step.sh"
# The constant run trains the warm start; the warm-up runs start from a copy (--resume loads it, does not retrain it).
mcp-rl train --recipe calculator -o "$OUT/calcwu_const_s0" --resume "${CALCULATOR_384[@]}" --set trainer.max_steps=10 \
  > "$OUT/calcwu_const_s0.log" 2>&1 &
while [ ! -f "$OUT/calcwu_const_s0/warm_start/final/config.json" ]; do sleep 20; done; sleep 30
for seed in 0 1; do
  run=$OUT/calcwu_warm_s$seed
  mkdir -p "$run" && cp -r "$OUT/calcwu_const_s0/warm_start" "$run/"
  mcp-rl train --recipe calculator -o "$run" --resume "${CALCULATOR_384[@]}" "${WARMUP[@]}" --set trainer.seed="$seed" \
    > "$run.log" 2>&1 &
done
evaluate calcwu_warm "$OUT/calcwu_const_s0/warm_start/final"  # the warm start alone: the lr-0 control
for name in const_s0/checkpoint-10 warm_s0/checkpoint-10 warm_s1/checkpoint-10 warm_s0/checkpoint-20 \
  warm_s1/checkpoint-20; do
  evaluate_when_saved "calcwu_$(dirname "$name")_$(basename "$name" | sed 's/checkpoint-/grpo/')" "$OUT/calcwu_$name"
done
wait
# python bench/compare_evals.py $OUT/eval/calcwu_warm.errands.json $OUT/eval/calcwu_warm_s0_grpo10.errands.json \
#   --by kind --metric calculator_verified
