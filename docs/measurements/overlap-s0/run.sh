#!/usr/bin/env bash
# #26: the default search recipe with and without grpo.overlap, same seed, run side by side (1 thread each
# for the trainers, 1 for the overlap arm's generator), checkpoints every 10 steps. Writes under $OUT.
set -u
SEED=${1:-0}
STEPS=${2:-30}
OUT=${OUT:-runs}
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
mkdir -p "$OUT"
common=(--set trainer.seed="$SEED" --set trainer.max_steps="$STEPS" --set trainer.save_steps=10)
mcp-rl train --recipe search -o "$OUT/pair_s${SEED}_base" "${common[@]}" > "$OUT/pair_s${SEED}_base.log" 2>&1 &
mcp-rl train --recipe search -o "$OUT/pair_s${SEED}_overlap" "${common[@]}" \
  --set rollout.backend=process --set grpo.overlap=true --set rollout.generator_threads=1 \
  > "$OUT/pair_s${SEED}_overlap.log" 2>&1 &
wait
