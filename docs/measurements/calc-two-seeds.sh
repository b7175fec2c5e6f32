#!/usr/bin/env bash
# One change against the calculator recipe's GRPO step, seeds 0 and 1 side by side, 20 steps, each from a copy
# of one finished warm start (WARM), whose evaluation alone is the lr-0 control (../calc-warmup's calcwu_warm.*).
# Greedy, 200 tasks, test and errands, at 10 and 20 steps, as $OUT/eval/NAME_sSEED_grpoN.{test,errands}.json.
# Usage: WARM=runs/calcwu_const_s0/warm_start calc-two-seeds.sh NAME --set FIELD=VALUE ...   (OUT: runs/;
# SEEDS="2" runs other seeds)
# Each run takes the recipe as these were measured (CALCULATOR_384 of calculator-step.sh: 4 questions x 8 samples
# a step) with NAME's --sets on top, so it reruns as measured whatever the recipe ships now.
set -u
NAME=$1; shift
OUT=${OUT:-runs}
WARM=${WARM:?the warm_start folder of a finished calculator run}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
mkdir -p "$OUT/eval"
source "$(dirname "$0")/calc-evaluate.sh"
source "$(dirname "$0")/calculator-step.sh"
SEEDS=${SEEDS:-0 1}
for seed in $SEEDS; do
  run=$OUT/${NAME}_s$seed
  mkdir -p "$run" && cp -r "$WARM" "$run/"
  mcp-rl train --recipe calculator -o "$run" --resume "${CALCULATOR_384[@]}" "$@" --set trainer.seed="$seed" > "$run.log" 2>&1 &
done
for name in $(for n in 10 20; do for seed in $SEEDS; do echo "s$seed/checkpoint-$n"; done; done); do
  evaluate_when_saved "${NAME}_$(dirname "$name")_$(basename "$name" | sed 's/checkpoint-/grpo/')" "$OUT/${NAME}_$name"
done
wait
