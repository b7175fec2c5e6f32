#!/usr/bin/env bash
# #23: is the calculator's dip on errands the noise of which 4 questions a step draws? 8 questions a step
# (gradient_accumulation_steps 16, extra rollouts scaled with it to 64), same lr and groups of 8.
# About 40 min on 2 cores (35 min of it training).
# Usage: WARM=runs/calcwu_const_s0/warm_start run.sh   (a finished warm start, e.g. ../calc-warmup's run)
exec "$(dirname "$0")/../calc-two-seeds.sh" calcb8 --set trainer.gradient_accumulation_steps=16 \
  --set grpo.max_extra_rollouts=64
