#!/usr/bin/env bash
# #23: GRPO after the records warm start (160 demonstrations, each on its own copy of the club database),
# seeds 0 and 1 of trainer.seed, the calculator's step for 20 steps, checkpoints at 10 / 20; greedy
# evaluation, 200 tasks, of the club's test tasks and of an unseen club (seed 1).
# Usage: run.sh warm (the warm start, then one GRPO step at learning rate 0: the warm start alone, the
#        control), then run.sh a SEED for seeds 0 and 1. The steps of the shipped recipe before (30 at 5e-5,
#        no KL, 4 x 4) are not rerun: the README's records row measured them.
RECIPE=records TAG=records EVALUATE_SHIPPED=0
WARM_SETS=(--set trainer.max_steps=1 --set trainer.learning_rate=0)
prepare() { club_prepare; }
evaluate() { club_evaluate "$@"; }
source "$(dirname "$0")/../warm-then-grpo.sh"
# Sampled (4 a task at T 0.8): mcp-rl eval --recipe records --limit 200 --samples 4 --model M
