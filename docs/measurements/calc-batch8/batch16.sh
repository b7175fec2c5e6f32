#!/usr/bin/env bash
# #23: one step further along the same line: 16 questions a step (gradient_accumulation_steps 32, extra rollouts
# scaled to 128), seeds 0 and 1, 20 steps, from the same warm start. Does seed 0's dip at 10 steps go away?
# Usage: WARM=runs/calcwu_const_s0/warm_start batch16.sh   (OUT defaults to runs/)
exec "$(dirname "$0")/../calc-two-seeds.sh" calcb16 --set trainer.gradient_accumulation_steps=32 \
  --set grpo.max_extra_rollouts=128
