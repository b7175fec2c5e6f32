#!/usr/bin/env bash
# #23: GRPO after the pooled calculator warm start (warm_start.split: [train, train_composed]; 256
# demonstrations, 39 of them composed), 20 steps, checkpoints 10 / 20, seeds 0 and 1 of trainer.seed.
#   d   GRPO on train_composed, the recipe's batch (2 groups of 8 a step, 16 extra rollouts)
#   e   d with 4 groups of 8 a step (gradient_accumulation_steps 8, 32 extra rollouts)
#   f   e with grpo.negative_advantage_weight 0 (learn from the better samples of each group only)
#   g   e with trainer.beta 0.1 instead of 0.04 (what recipes/calculator.yaml then ran)
# Then greedy evaluation, 200 tasks, of the arithmetic test split and of errands (written apart).
# Usage: run.sh ARM SEED   (the first call also trains and evaluates the warm start); OUT defaults to runs/.
set -u
ARM=$1 SEED=$2 OUT=${OUT:-runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
source "$(dirname "$0")/../calculator-step.sh"
POOLED=("${CALCULATOR_256[@]}" --set "warm_start.split=[train, train_composed]")
# d is the recipe as it was before this measurement (CALCULATOR_256, in POOLED) on train_composed; e, f and g
# each change it.
D=(--set data.train_split=train_composed)
BIG=(--set trainer.gradient_accumulation_steps=8 --set grpo.max_extra_rollouts=32)
case $ARM in
  d) SETS=("${D[@]}") ;;
  e) SETS=("${D[@]}" "${BIG[@]}") ;;
  f) SETS=("${D[@]}" "${BIG[@]}" --set grpo.negative_advantage_weight=0) ;;
  g) SETS=("${D[@]}" "${BIG[@]}" --set trainer.beta=0.1) ;;
esac
evaluate() {  # name model
  mcp-rl eval --recipe calculator --limit 200 --model "$2" --output "$OUT/eval/calc_$1.test.json"
  mcp-rl eval --recipe calculator --limit 200 --model "$2" --set data.eval=errands --output "$OUT/eval/calc_$1.errands.json"
}
mkdir -p "$OUT/eval"
if [ ! -f "$OUT/calc_pooled/warm_start/stats.json" ]; then  # the pooled warm start alone (the lr-0 control)
  mcp-rl train --recipe calculator -o "$OUT/calc_pooled" "${POOLED[@]}" --set trainer.max_steps=1
  evaluate wsmixed "$OUT/calc_pooled/warm_start/final"
fi
RUN=$OUT/calc_${ARM}_s$SEED
mkdir -p "$RUN" && cp -r "$OUT/calc_pooled/warm_start" "$RUN/"  # --resume loads it, does not retrain it
mcp-rl train --recipe calculator -o "$RUN" --resume "${POOLED[@]}" --set trainer.max_steps=20 \
  --set trainer.seed="$SEED" "${SETS[@]}"
for step in 10 20; do evaluate "${ARM}_s${SEED}_grpo$step" "$RUN/checkpoint-$step"; done
# Sampled (4 a task at T 0.8): mcp-rl eval --recipe calculator --limit 200 --samples 4 --model M [--set data.eval=errands]
# python bench/compare_evals.py $OUT/eval/calc_wsmixed.errands.json $OUT/eval/calc_e_s0_grpo20.errands.json \
#   --by kind --metric calculator_verified
