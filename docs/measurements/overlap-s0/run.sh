#!/usr/bin/env bash
# #26: the default search recipe with and without grpo.overlap, same seed, run side by side (1 thread each
# for the trainers, 1 for the overlap arm's generator), checkpoints every 10 steps.
set -u
cd /work/main
SEED=${1:-0}
STEPS=${2:-30}
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
common="--set trainer.seed=$SEED --set trainer.max_steps=$STEPS --set trainer.save_steps=10"
.venv/bin/mcp-rl train --recipe search -o /work/exp/pair_s${SEED}_base $common > /work/exp/pair_s${SEED}_base.log 2>&1 &
.venv/bin/mcp-rl train --recipe search -o /work/exp/pair_s${SEED}_overlap $common \
  --set rollout.backend=process --set grpo.overlap=true --set rollout.generator_threads=1 \
  > /work/exp/pair_s${SEED}_overlap.log 2>&1 &
wait
