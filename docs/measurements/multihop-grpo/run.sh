#!/usr/bin/env bash
# #23: GRPO after the search-multihop warm start (1,024 demonstrations, 3 epochs, train_varied, balanced by
# hops), seeds 0 and 1 of trainer.seed, 20 steps, checkpoints at 10 / 20.
#   a   the calculator's step (../calculator-step.sh): what the recipe now runs
# Then greedy evaluation, 200 questions, of our world's test split and of chronicle (written apart).
# Usage: run.sh warm (the recipe as shipped before: the warm start, then one GRPO step at 3e-5, no KL, 4 x 4,
#        written out: the recipe now runs arm a; THREADS=2 for it alone), then run.sh ARM SEED for each arm
#        and seed, each from a copy of that warm start.
set -u
ARM=$1 SEED=${2:-0} OUT=${OUT:-runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
source "$(dirname "$0")/../calculator-step.sh"
case $ARM in
  a) SETS=("${CALCULATOR_STEP[@]}") ;;
  warm) ;;
esac
evaluate() {  # name model
  mcp-rl eval --recipe search-multihop --limit 200 --model "$2" --output "$OUT/eval/mh_$1.test.json"
  mcp-rl eval --recipe search-multihop --limit 200 --model "$2" --corpus chronicle --qa chronicle \
    --output "$OUT/eval/mh_$1.chronicle.json"
}
mkdir -p "$OUT/eval"
if [ "$ARM" = warm ]; then
  mcp-rl train --recipe search-multihop -o "$OUT/mh_warm" --set trainer.max_steps=1 --set trainer.learning_rate=3e-5 \
    --set trainer.beta=0 --set grpo.dynamic_sampling=false --set trainer.num_generations=4 \
    --set trainer.gradient_accumulation_steps=4 --set trainer.save_steps=20
  evaluate warm "$OUT/mh_warm/warm_start/final"  # the warm start alone: the lr-0 control
  evaluate shipped "$OUT/mh_warm/final"          # the recipe before: the warm start and one GRPO step
  exit
fi
RUN=$OUT/mh_${ARM}_s$SEED
mkdir -p "$RUN" && cp -r "$OUT/mh_warm/warm_start" "$RUN/"  # --resume loads it, does not retrain it
mcp-rl train --recipe search-multihop -o "$RUN" --resume --set trainer.max_steps=20 \
  --set trainer.seed="$SEED" "${SETS[@]}"
for step in 10 20; do evaluate "${ARM}_s${SEED}_grpo$step" "$RUN/checkpoint-$step"; done
# Sampled (4 a question at T 0.8): mcp-rl eval --recipe search-multihop --limit 200 --samples 4 --model M
