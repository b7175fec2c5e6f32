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
SETS=(--set data.train_split=train_varied --set warm_start.split=train
  --set grpo.dynamic_sampling=true --set grpo.max_extra_rollouts=16 --set trainer.num_generations=8
  --set trainer.beta=0.04 --set trainer.gradient_accumulation_steps=4
  --set trainer.save_steps=10 --set trainer.seed=1)
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
