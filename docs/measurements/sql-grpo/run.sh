#!/usr/bin/env bash
# #23: GRPO after the sql warm start (256 demonstrations through mcp-server-sqlite), seeds 0 and 1 of
# trainer.seed, the calculator's step for 20 steps (what the recipe now runs), checkpoints at 10 / 20; greedy
# evaluation, 200 questions, of the club's test split and of an unseen club (seed 1).
# Usage: run.sh warm (the recipe as shipped before: the warm start, then 30 GRPO steps at 5e-5, no KL, 4 x 4),
#        then run.sh a SEED for seeds 0 and 1, each from a copy of that warm start.
RECIPE=sql TAG=sql
WARM_SETS=(--set trainer.learning_rate=5e-5 --set trainer.beta=0 --set grpo.dynamic_sampling=false
  --set trainer.num_generations=4 --set trainer.gradient_accumulation_steps=4 --set trainer.max_steps=30)
prepare() { club_prepare; }
evaluate() { club_evaluate "$@"; }
source "$(dirname "$0")/../warm-then-grpo.sh"
# Sampled (4 a question at T 0.8): mcp-rl eval --recipe sql --limit 200 --samples 4 --model M
