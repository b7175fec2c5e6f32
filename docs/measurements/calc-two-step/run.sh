#!/usr/bin/env bash
# #23: GRPO on the two-operation problems only. errands' two_step stays at 0.30-0.375 under every step tried,
# while train_broad, where GRPO draws its questions, is half two-operation problems. One change against the
# recipe: data.train_split is train_broad's two-operation rows (train_two.jsonl, 2,023 rows, written by
# split.py), seeds 0 and 1, 20 steps, from one copy of a fresh warm start (the recipe's, seed 0), whose
# evaluation alone is the lr-0 control. The recipe as measured (8 questions x 8 samples, 384 demonstrations) is
# pinned from ../calculator-step.sh. Greedy, 200 tasks, test and errands, at 10 and 20 steps; and the
# warm start alone on 200 of train_two, the problems GRPO trains on.
# Usage: run.sh   (OUT defaults to runs/; about 60 min on a 2-core AMD EPYC with AVX512-BF16)
set -u
OUT=${OUT:-runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
mkdir -p "$OUT/eval"
here=$(dirname "$0")
source "$here/../calc-evaluate.sh"
source "$here/../calculator-step.sh"
python "$here/split.py" "$OUT/arith2"
OMP_NUM_THREADS=2 warm_start_only "$OUT/calc2_warm" "${CALCULATOR_384[@]}"
for seed in 0 1; do
  run=$OUT/calc2two_s$seed
  mkdir -p "$run" && cp -r "$OUT/calc2_warm/warm_start" "$run/"
  mcp-rl train --recipe calculator -o "$run" --resume "${CALCULATOR_384[@]}" "${CALCULATOR_8Q[@]}" --set data.train="$OUT/arith2" \
    --set data.train_split=train_two --set trainer.seed="$seed" > "$run.log" 2>&1 &
done
evaluate calc2_warm "$OUT/calc2_warm/warm_start/final"  # the warm start alone: the lr-0 control
mcp-rl eval --recipe calculator --limit 200 --model "$OUT/calc2_warm/warm_start/final" \
  --set data.eval="$OUT/arith2" --set data.eval_split=train_two --output "$OUT/eval/calc2_warm.train_two.json"
for name in s0/checkpoint-10 s1/checkpoint-10 s0/checkpoint-20 s1/checkpoint-20; do
  evaluate_when_saved "calc2two_$(dirname "$name")_$(basename "$name" | sed 's/checkpoint-/grpo/')" "$OUT/calc2two_$name"
done
wait
