#!/usr/bin/env bash
# #23: the control beside the 8-question arm: the recipe as it was (4 questions a step), same warm start, same
# CPU, seeds 0, 1 and 2 to 20 steps. Seed 0 continues ../calc-warmup's constant run from its checkpoint-10;
# seeds 1 and 2 start from a copy of its warm start. Greedy, 200 tasks, test and errands, at 10 and 20 steps,
# as $OUT/eval/calc4q_sSEED_grpoN.*.json. Two trainers at a time: a third does not fit in 24 GiB beside an eval.
# The recipe as measured is pinned (CALCULATOR_384 of ../calculator-step.sh: 4 questions x 8 samples).
# Usage: control.sh   (WARMUP_OUT: calc-warmup's OUT, holding calcwu_const_s0; OUT defaults to runs/)
set -u
OUT=${OUT:-runs}
CONST=${WARMUP_OUT:-runs}/calcwu_const_s0
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
mkdir -p "$OUT/eval"
source "$(dirname "$0")/../calc-evaluate.sh"
source "$(dirname "$0")/../calculator-step.sh"
train() {  # seed run
  mcp-rl train --recipe calculator -o "$2" --resume "${CALCULATOR_384[@]}" --set trainer.seed="$1" \
    --set trainer.max_steps=20 > "$2.to20.log" 2>&1
}
for seed in 1 2; do mkdir -p "$OUT/calc4q_s$seed" && cp -r "$CONST/warm_start" "$OUT/calc4q_s$seed/"; done
train 0 "$CONST" && train 2 "$OUT/calc4q_s2" &
train 1 "$OUT/calc4q_s1" &
evaluate_when_saved calc4q_s0_grpo20 "$CONST/checkpoint-20"
evaluate_when_saved calc4q_s1_grpo10 "$OUT/calc4q_s1/checkpoint-10"
evaluate_when_saved calc4q_s1_grpo20 "$OUT/calc4q_s1/checkpoint-20"
evaluate_when_saved calc4q_s2_grpo10 "$OUT/calc4q_s2/checkpoint-10"
evaluate_when_saved calc4q_s2_grpo20 "$OUT/calc4q_s2/checkpoint-20"
wait
