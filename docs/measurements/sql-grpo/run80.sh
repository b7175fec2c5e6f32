#!/usr/bin/env bash
# #23: the sql recipe's own step (the calculator's step) run to 80 steps, seeds 0 and 1 side by side, from one
# warm start; greedy evaluation of the warm start alone and of checkpoints 20 / 40 / 60 / 80 on the club's
# test split and on an unseen club (seed 1); sampled (4 a task at T 0.8) at 80 steps on the test split.
# Usage: run80.sh   (OUT defaults to runs/; about 2 h on 2 cores)
set -u
OUT=${OUT:-runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
source "$(dirname "$0")/../calculator-step.sh"
mkdir -p "$OUT/eval"
[ -d "$OUT/club1" ] || python -m mcp_rl.datasets.club --seed 1 --out "$OUT/club1"
evaluate() {  # name model
  mcp-rl eval --recipe sql --limit 200 --model "$2" --output "$OUT/eval/sql80_$1.test.json"
  mcp-rl eval --recipe sql --limit 200 --model "$2" --set data.eval="$OUT/club1" \
    --set data.corpus="$OUT/club1/seed.db" --output "$OUT/eval/sql80_$1.club1.json"
}
train() {  # seed
  mcp-rl train --recipe sql -o "$OUT/sql80_s$1" --resume --set trainer.max_steps=80 --set trainer.seed="$1" \
    "${CALCULATOR_STEP[@]}"
}
# Seed 0's run trains the warm start; seed 1 starts from a copy of it (--resume loads it, does not retrain it).
train 0 > "$OUT/sql80_s0.log" 2>&1 &
while [ ! -f "$OUT/sql80_s0/warm_start/final/config.json" ]; do sleep 20; done; sleep 30
mkdir -p "$OUT/sql80_s1" && cp -r "$OUT/sql80_s0/warm_start" "$OUT/sql80_s1/"
train 1 > "$OUT/sql80_s1.log" 2>&1 &
evaluate warm "$OUT/sql80_s0/warm_start/final"  # the warm start alone: the lr-0 control
for step in 20 40 60 80; do
  for seed in 0 1; do
    checkpoint=$OUT/sql80_s$seed/checkpoint-$step
    while [ ! -f "$checkpoint/trainer_state.json" ]; do sleep 30; done; sleep 20
    evaluate "s${seed}_grpo$step" "$checkpoint"
  done
done
sampled() {  # name model
  mcp-rl eval --recipe sql --limit 200 --samples 4 --model "$2" --output "$OUT/eval/sql80_$1.test.sampled.json"
}
sampled warm "$OUT/sql80_s0/warm_start/final"
for seed in 0 1; do sampled "s${seed}_grpo80" "$OUT/sql80_s$seed/checkpoint-80"; done
wait
