#!/usr/bin/env bash
# The third arm of seed 1: the generator in a second process (its own sampling stream) without overlap.
# Writes under $OUT.
set -u
OUT=${OUT:-runs}
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
mkdir -p "$OUT"
mcp-rl train --recipe search -o "$OUT/pair_s1_process" --set trainer.seed=1 --set trainer.max_steps=20 \
  --set trainer.save_steps=10 --set rollout.backend=process --set rollout.generator_threads=1 \
  > "$OUT/pair_s1_process.log" 2>&1
mcp-rl eval --recipe search --limit 300 --model "$OUT/pair_s1_process/checkpoint-20" \
  --output "$OUT/process.checkpoint-20.eval.json"
