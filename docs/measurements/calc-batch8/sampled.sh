#!/usr/bin/env bash
# #23: the 8-question runs at the recipe's 20 steps beyond greedy errands: sampled (4 a task at the recipe's T 0.8)
# on errands and on the test, and greedy on the unseen variant of the generator (arith1), for the warm start
# alone and seeds 0, 1, 2. Usage: WARM=runs/calcwu_const_s0/warm_start sampled.sh   (after run.sh; OUT: runs/)
set -u
OUT=${OUT:-runs}
WARM=${WARM:?the warm_start folder of the runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
[ -d "$OUT/arith1" ] || python -m mcp_rl.datasets.arithmetic --seed 1 --out "$OUT/arith1"
for label in warm s0 s1 s2; do
  model=$OUT/calcb8_$label/checkpoint-20 name=calcb8_${label}_grpo20
  [ "$label" = warm ] && model=$WARM/final name=calcwu_warm
  mcp-rl eval --recipe calculator --limit 200 --model "$model" --set data.eval="$OUT/arith1" \
    --output "$OUT/eval/$name.arith1.json"
  mcp-rl eval --recipe calculator --limit 200 --samples 4 --model "$model" --output "$OUT/eval/$name.test.sampled.json"
  [ -f "$OUT/eval/$name.errands.sampled.json" ] || mcp-rl eval --recipe calculator --limit 200 --samples 4 \
    --model "$model" --set data.eval=errands --output "$OUT/eval/$name.errands.sampled.json"
done
