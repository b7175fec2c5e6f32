#!/usr/bin/env bash
# #23: does a learning-rate warm-up remove the calculator's dip at 10 steps? One change against the recipe:
#   const 0   the recipe as shipped (constant lr 1e-5), seed 0, to 10 steps: the dip, reproduced on this CPU
#   warm  S   lr_scheduler_type constant_with_warmup, warmup_steps 10, seeds 0 and 1, to 20 steps
# all from one warm start, whose evaluation alone is the lr-0 control. Greedy, 200 tasks, test and errands.
# Usage: run.sh   (OUT defaults to runs/; about 30 min on the 2-core EPYC of its README)
# Measured when the recipe took 384 demonstrations and 4 questions x 8 samples a step; it now takes 2,048 and
# 8 x 16. To rerun as measured, add --set warm_start.episodes=384 --set trainer.num_generations=8
# --set trainer.gradient_accumulation_steps=8 --set grpo.max_extra_rollouts=32.
set -u
OUT=${OUT:-runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
WARMUP=(--set trainer.lr_scheduler_type=constant_with_warmup --set trainer.warmup_steps=10)
mkdir -p "$OUT/eval"
source "$(dirname "$0")/../calc-evaluate.sh"
# The constant run trains the warm start; the warm-up runs start from a copy (--resume loads it, does not retrain it).
mcp-rl train --recipe calculator -o "$OUT/calcwu_const_s0" --resume --set trainer.max_steps=10 \
  > "$OUT/calcwu_const_s0.log" 2>&1 &
while [ ! -f "$OUT/calcwu_const_s0/warm_start/final/config.json" ]; do sleep 20; done; sleep 30
for seed in 0 1; do
  run=$OUT/calcwu_warm_s$seed
  mkdir -p "$run" && cp -r "$OUT/calcwu_const_s0/warm_start" "$run/"
  mcp-rl train --recipe calculator -o "$run" --resume "${WARMUP[@]}" --set trainer.seed="$seed" \
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
