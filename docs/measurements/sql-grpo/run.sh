#!/usr/bin/env bash
# #23: GRPO after the sql warm start (256 demonstrations through mcp-server-sqlite), seeds 0 and 1 of
# trainer.seed, 20 steps, checkpoints at 10 / 20.
#   a   the calculator's step (../calculator-step.sh): what the recipe now runs
# Then greedy evaluation, 200 questions, of the club's test split and of an unseen club (seed 1).
# Usage: run.sh warm (the recipe as shipped before: the warm start, then 30 GRPO steps at 5e-5, no KL, 4 x 4,
#        written out: the recipe now runs arm a), then run.sh ARM SEED for each arm and seed, each from a copy
#        of that warm start.
set -u
ARM=$1 SEED=${2:-0} OUT=${OUT:-runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
source "$(dirname "$0")/../calculator-step.sh"
case $ARM in
  a) SETS=("${CALCULATOR_STEP[@]}") ;;
  warm) ;;
esac
[ -d "$OUT/club1" ] || python -m mcp_rl.datasets.club --seed 1 --out "$OUT/club1"
evaluate() {  # name model
  mcp-rl eval --recipe sql --limit 200 --model "$2" --output "$OUT/eval/sql_$1.test.json"
  mcp-rl eval --recipe sql --limit 200 --model "$2" --set data.eval="$OUT/club1" \
    --set data.corpus="$OUT/club1/seed.db" --output "$OUT/eval/sql_$1.club1.json"
}
mkdir -p "$OUT/eval"
if [ "$ARM" = warm ]; then
  mcp-rl train --recipe sql -o "$OUT/sql_warm" --set trainer.learning_rate=5e-5 --set trainer.beta=0 \
    --set grpo.dynamic_sampling=false --set trainer.num_generations=4 --set trainer.gradient_accumulation_steps=4 \
    --set trainer.max_steps=30
  evaluate warm "$OUT/sql_warm/warm_start/final"  # the warm start alone: the lr-0 control
  evaluate shipped "$OUT/sql_warm/final"          # the recipe before: the warm start and 30 GRPO steps
  exit
fi
RUN=$OUT/sql_${ARM}_s$SEED
mkdir -p "$RUN" && cp -r "$OUT/sql_warm/warm_start" "$RUN/"  # --resume loads it, does not retrain it
mcp-rl train --recipe sql -o "$RUN" --resume --set trainer.max_steps=20 \
  --set trainer.seed="$SEED" "${SETS[@]}"
for step in 10 20; do evaluate "${ARM}_s${SEED}_grpo$step" "$RUN/checkpoint-$step"; done
# Sampled (4 a question at T 0.8): mcp-rl eval --recipe sql --limit 200 --samples 4 --model M
