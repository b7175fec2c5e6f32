#!/usr/bin/env bash
# #23: four GRPO arms after one shared calculator warm start (the recipe's: 256 demonstrations in the shipped
# phrasing), 30 steps each, checkpoints 10 / 20 / 30, seeds 0 and 1 of trainer.seed:
#   a   the recipe as it was: GRPO on train_varied                          (grpo.sft_coef 0)
#   b   the same with the warm start's token loss mixed in                  (grpo.sft_coef 1)
#   c   GRPO on train_composed (train_varied + 600 two-operation problems)  (grpo.sft_coef 1)
#   c0  GRPO on train_composed                                              (grpo.sft_coef 0)
# Then greedy evaluation, 200 tasks, of the arithmetic test split and of errands (written apart).
# Usage: run.sh ARM SEED   (the first call also trains and evaluates the warm start); OUT defaults to runs/.
set -u
ARM=$1 SEED=$2 OUT=${OUT:-runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
source "$(dirname "$0")/../calculator-step.sh"  # CALCULATOR_256: the recipe as it was then
case $ARM in
  a) SETS=(--set grpo.sft_coef=0 --set data.train_split=train_varied) ;;
  b) SETS=(--set grpo.sft_coef=1.0 --set data.train_split=train_varied) ;;
  c) SETS=(--set grpo.sft_coef=1.0 --set data.train_split=train_composed) ;;
  c0) SETS=(--set grpo.sft_coef=0 --set data.train_split=train_composed) ;;
esac
evaluate() {  # name model
  mcp-rl eval --recipe calculator --limit 200 --model "$2" --output "$OUT/eval/calc_$1.test.json"
  mcp-rl eval --recipe calculator --limit 200 --model "$2" --set data.eval=errands --output "$OUT/eval/calc_$1.errands.json"
}
mkdir -p "$OUT/eval"
if [ ! -f "$OUT/calc_warmstart/warm_start/stats.json" ]; then  # the warm start alone: 0 GRPO steps kept
  mcp-rl train --recipe calculator -o "$OUT/calc_warmstart" "${CALCULATOR_256[@]}" --set trainer.max_steps=1
  evaluate warmstart "$OUT/calc_warmstart/warm_start/final"
fi
RUN=$OUT/calc_${ARM}_s$SEED
mkdir -p "$RUN" && cp -r "$OUT/calc_warmstart/warm_start" "$RUN/"  # --resume loads it, does not retrain it
mcp-rl train --recipe calculator -o "$RUN" --resume "${CALCULATOR_256[@]}" --set trainer.max_steps=30 --set trainer.seed="$SEED" "${SETS[@]}"
for step in 10 20 30; do evaluate "${ARM}_s${SEED}_grpo$step" "$RUN/checkpoint-$step"; done
# python bench/compare_evals.py $OUT/eval/calc_warmstart.errands.json $OUT/eval/calc_c0_s0_grpo30.errands.json \
#   --by kind --metric calculator_verified
# The pilot with composed problems in the warm start (seed 0, 10 steps):
#   mcp-rl train --recipe calculator -o $OUT/calc_wsc_s0 "${CALCULATOR_256[@]}" --set warm_start.split=train_composed \
#     --set data.train_split=train_composed --set trainer.max_steps=10 --set trainer.save_steps=10
# Sampled (4 a task at T 0.8): mcp-rl eval --recipe calculator --limit 200 --samples 4 --model M [--set data.eval=errands]
# Pooled demonstrations, then the recipe's GRPO for 10 steps (seeds 0, 1):
#   mcp-rl train --recipe calculator -o $OUT/calc_wsm_s0 "${CALCULATOR_256[@]}" --set "warm_start.split=[train, train_composed]" \
#     --set data.train_split=train_varied --set trainer.max_steps=10 --set trainer.save_steps=10 --set trainer.seed=0
