#!/usr/bin/env bash
# #23: the calculator recipe's GRPO with another seed, from seed 0's warm start (the same warm_start.seed, so
# the same model: copied in, --resume skips it and keeps it as the KL reference), 20 steps, then resumed to 30.
# The settings were the recipe's own from this run until the pooled warm start (train_varied, warm_start.split
# train, dynamic sampling, groups of 8, 2 questions a step, beta 0.04); they are written out so that it reruns
# the same on any recipe.
set -u
RUN=${RUN:-runs/calc-split-s1}
FROM=${FROM:-runs/calc-split-s0}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
source "$(dirname "$0")/../calculator-step.sh"  # CALCULATOR_256: those settings
SETS=("${CALCULATOR_256[@]}" --set trainer.save_steps=10 --set trainer.seed=1)
mkdir -p "$RUN" && cp -r "$FROM/warm_start" "$RUN/"
mcp-rl train --recipe calculator -o "$RUN" --resume "${SETS[@]}" --set trainer.max_steps=20
mcp-rl train --recipe calculator -o "$RUN" --resume "${SETS[@]}" --set trainer.max_steps=30
for step in 10 20 30; do
  mcp-rl eval --recipe calculator --limit 200 --model "$RUN/checkpoint-$step" --set data.eval=errands \
    --output "$RUN/eval/calc_grpo$step.errands.json"
  mcp-rl eval --recipe calculator --limit 200 --model "$RUN/checkpoint-$step" \
    --output "$RUN/eval/calc_grpo$step.test.json"
done
# The unseen variant: python -m mcp_rl.datasets.arithmetic --seed 1 --out arith1, then --set data.eval=arith1.
