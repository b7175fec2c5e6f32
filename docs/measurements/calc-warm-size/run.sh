#!/usr/bin/env bash
# #23: the warm start's size. errands' two_step stayed at 0.30-0.375 under every GRPO step tried, and the broad
# warm start (384 demonstrations from [train, train_broad]) is what had lifted errands most (0.560 -> 0.715).
# One change against the recipe as it was: warm_start.episodes (more demonstrations drawn from the same pooled
# splits, the same 2 epochs). Each run is stopped once its warm start is written, and the warm start alone is
# evaluated (greedy, 200 tasks, test and errands).
# Usage: run.sh 1024 2048 ...   (OUT defaults to runs/; WARM_SEED=1 draws and orders them with another seed)
# Then GRPO from the 2048 one, seeds 0 and 1, 20 steps, with the groups of 8 the recipe then had:
#   WARM=runs/calcws2048/warm_start ../calc-two-seeds.sh calcws2048g --set trainer.num_generations=8 \
#     --set trainer.gradient_accumulation_steps=16 --set grpo.max_extra_rollouts=64
# and with groups of 16 instead of 8 (the same 8 questions a step, so twice the completions and extra rollouts),
# from a rerun of that warm start alone with 2 threads (THREADS=2 run.sh 2048; its evaluation, kept as
# calcws2048r.*, is this run's lr-0 control):
#   WARM=runs/calcws2048/warm_start ../calc-two-seeds.sh calcws2048n16 --set trainer.num_generations=16 \
#     --set trainer.gradient_accumulation_steps=32 --set grpo.max_extra_rollouts=128
set -u
OUT=${OUT:-runs}
WARM_SEED=${WARM_SEED:-0}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
mkdir -p "$OUT/eval"
source "$(dirname "$0")/../calc-evaluate.sh"
warm() {  # episodes
  local name=calcws$1
  [ "$WARM_SEED" = 0 ] || name=${name}w$WARM_SEED
  warm_start_only "$OUT/$name" --set warm_start.episodes="$1" --set warm_start.seed="$WARM_SEED"
  evaluate "$name" "$OUT/$name/warm_start/final"
}
for episodes in "$@"; do warm "$episodes" & done
wait
