#!/usr/bin/env bash
# #23: the calculator's shipped warm start (256 demonstrations in the shipped phrasing, `warm_start.split:
# train`), then GRPO on the same training problems phrased anew (`data.train_split: train_varied`): dynamic
# sampling (16 extra rollouts at most), groups of 8, KL 0.04 to the warm start, the recipe's lr 1e-5.
# Then greedy evaluation of the warm start alone and of each GRPO checkpoint, 200 tasks of errands (written
# apart from the generator) and of the arithmetic test split.
set -u
SEED=${1:-0}
RUN=${RUN:-runs/calc-split-s$SEED}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
source "$(dirname "$0")/../calculator-step.sh"  # CALCULATOR_256: the settings above
SETS=("${CALCULATOR_256[@]}" --set trainer.save_steps=10 --set trainer.seed="$SEED")
# It ran in three parts: to step 24 (stopped by hand; the rest reran from checkpoint 20), to 40, to 60.
# Each --resume continues from the newest complete checkpoint, with its optimizer state.
for steps in 20 40 60; do
  mcp-rl train --recipe calculator -o "$RUN" --resume "${SETS[@]}" --set trainer.max_steps=$steps
done
# Named as the reports in docs/measurements/calc-split-s0/: calc_warmstart.*, calc_grpoN.*
for pair in warmstart:warm_start/final grpo10:checkpoint-10 grpo20:checkpoint-20 grpo30:checkpoint-30 \
  grpo40:checkpoint-40 grpo60:checkpoint-60; do
  name=${pair%%:*} model=${pair#*:}
  mcp-rl eval --recipe calculator --limit 200 --model "$RUN/$model" --set data.eval=errands \
    --output "$RUN/eval/calc_$name.errands.json"
  mcp-rl eval --recipe calculator --limit 200 --model "$RUN/$model" --output "$RUN/eval/calc_$name.test.json"
done
# Sampled (4 a task at T 0.8) and the unseen variant, for the warm start and checkpoint 20:
#   mcp-rl eval ... --samples 4 --set data.eval=errands;  python -m mcp_rl.datasets.arithmetic --seed 1 --out arith1
#   and mcp-rl eval ... --set data.eval=arith1
# python bench/compare_evals.py A.errands.json B.errands.json --by kind --metric calculator_verified
