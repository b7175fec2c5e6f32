#!/usr/bin/env bash
# #23: the calculator's warm start with problems of two operations demonstrated as two calls, one operation
# each (one_operation_per_call.py), everything else as recipes/calculator.yaml shipped it then.
#   warm     that warm start alone (the lr-0 control of the GRPO runs), 384 demonstrations
#   g SEED   the recipe's GRPO step from a copy of it, 20 steps, checkpoints 10 / 20
# Each is evaluated greedy on 200 tasks of errands (written apart) and of the arithmetic test split.
# The control of the warm start itself is ../calc-broad/calc_broad_warm.* (the recipe's warm start alone).
# Usage: run.sh warm; run.sh g 0; run.sh g 1.  OUT defaults to runs/.
set -u
ARM=$1 SEED=${2:-0} OUT=${OUT:-runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../calculator-step.sh"  # the recipe as measured: CALCULATOR_384
DEMONSTRATIONS=("${CALCULATOR_384[@]}" --set "warm_start.demonstrations=$HERE/one_operation_per_call.py:one_operation_per_call")
evaluate() {  # name model
  mcp-rl eval --recipe calculator --limit 200 --model "$2" --set data.eval=errands \
    --output "$OUT/eval/calc_$1.errands.json"
  mcp-rl eval --recipe calculator --limit 200 --model "$2" --output "$OUT/eval/calc_$1.test.json"
}
mkdir -p "$OUT/eval"
case $ARM in
  warm)
    mcp-rl train --recipe calculator -o "$OUT/calc_steps" "${DEMONSTRATIONS[@]}" --set trainer.max_steps=1
    evaluate steps_warm "$OUT/calc_steps/warm_start/final" ;;
  g)
    RUN=$OUT/calc_steps_g_s$SEED
    mkdir -p "$RUN" && cp -r "$OUT/calc_steps/warm_start" "$RUN/"  # --resume loads it, does not retrain it
    mcp-rl train --recipe calculator -o "$RUN" --resume "${DEMONSTRATIONS[@]}" --set trainer.seed="$SEED" \
      --set probes.demonstrations=32
    for step in 10 20; do evaluate "steps_g_s${SEED}_grpo$step" "$RUN/checkpoint-$step"; done ;;
  *) echo "unknown arm $ARM: warm or g" >&2; exit 2 ;;
esac
# python bench/compare_evals.py ../calc-broad/calc_broad_warm.errands.json $OUT/eval/calc_steps_warm.errands.json \
#   --by kind --metric calculator_verified
