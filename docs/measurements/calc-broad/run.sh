#!/usr/bin/env bash
# #23: the calculator on the broad curriculum (train_broad: train_composed plus 1,500 problems across the
# semantic categories of word problems, written without reading errands).
#   warm       the warm start alone (the lr-0 control): 384 demonstrations drawn from train and train_broad
#              pooled, so that about as many come from the shipped phrasing as the recipe's 256 from
#              [train, train_composed] did
#   shipped    the recipe's own warm start alone, on this CPU, for comparison
#   g SEED     the recipe's GRPO step (arm g of calc-pooled-grpo) on train_broad, 20 steps from a copy of
#              the warm start, checkpoints 10 / 20
# Each is evaluated greedy on 200 tasks of the arithmetic test split and of errands (written apart).
# Usage: run.sh warm; run.sh shipped; run.sh g 0; run.sh g 1.  OUT defaults to runs/.
set -u
ARM=$1 SEED=${2:-0} OUT=${OUT:-runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
source "$(dirname "$0")/../calculator-step.sh"
# The broad curriculum as first tried is the recipe CALCULATOR_384 pins: 384 demonstrations from
# [train, train_broad], GRPO on train_broad.
BROAD=("${CALCULATOR_384[@]}")
evaluate() {  # name model
  mcp-rl eval --recipe calculator --limit 200 --model "$2" --output "$OUT/eval/calc_$1.test.json"
  mcp-rl eval --recipe calculator --limit 200 --model "$2" --set data.eval=errands \
    --output "$OUT/eval/calc_$1.errands.json"
}
mkdir -p "$OUT/eval"
case $ARM in
  warm)
    mcp-rl train --recipe calculator -o "$OUT/calc_broad" "${BROAD[@]}" --set trainer.max_steps=1
    evaluate broad_warm "$OUT/calc_broad/warm_start/final" ;;
  shipped)
    mcp-rl train --recipe calculator -o "$OUT/calc_shipped" --set trainer.max_steps=1
    evaluate shipped_warm "$OUT/calc_shipped/warm_start/final" ;;
  g)
    RUN=$OUT/calc_broad_g_s$SEED
    mkdir -p "$RUN" && cp -r "$OUT/calc_broad/warm_start" "$RUN/"  # --resume loads it, does not retrain it
    mcp-rl train --recipe calculator -o "$RUN" --resume "${BROAD[@]}" --set trainer.seed="$SEED"
    for step in 10 20; do evaluate "broad_g_s${SEED}_grpo$step" "$RUN/checkpoint-$step"; done ;;
  *) echo "unknown arm $ARM: warm, shipped or g" >&2; exit 2 ;;
esac
# Sampled (4 a task at T 0.8): mcp-rl eval --recipe calculator --limit 200 --samples 4 --model M [--set data.eval=errands]
# python bench/compare_evals.py $OUT/eval/calc_broad_warm.errands.json $OUT/eval/calc_broad_g_s0_grpo20.errands.json \
#   --by kind --metric calculator_verified
