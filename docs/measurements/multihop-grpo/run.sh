#!/usr/bin/env bash
# #23: GRPO after the search-multihop warm start (1,024 demonstrations, 3 epochs, train_varied, balanced by
# hops), seeds 0 and 1 of trainer.seed, the calculator's step for 20 steps (what the recipe now runs),
# checkpoints at 10 / 20; greedy evaluation, 200 questions, of our world's test split and of chronicle
# (written apart).
# Usage: run.sh warm (the recipe as shipped before: the warm start, then one GRPO step at 3e-5, no KL, 4 x 4;
#        THREADS=2 for it alone), then run.sh a SEED for seeds 0 and 1, each from a copy of that warm start.
RECIPE=search-multihop TAG=mh
WARM_SETS=(--set trainer.max_steps=1 --set trainer.learning_rate=3e-5 --set trainer.beta=0
  --set grpo.dynamic_sampling=false --set trainer.num_generations=4 --set trainer.gradient_accumulation_steps=4
  --set trainer.save_steps=20)
prepare() { :; }
evaluate() {  # name model
  mcp-rl eval --recipe search-multihop --limit 200 --model "$2" --output "$OUT/eval/mh_$1.test.json"
  mcp-rl eval --recipe search-multihop --limit 200 --model "$2" --corpus chronicle --qa chronicle \
    --output "$OUT/eval/mh_$1.chronicle.json"
}
source "$(dirname "$0")/../warm-then-grpo.sh"
# Sampled (4 a question at T 0.8): mcp-rl eval --recipe search-multihop --limit 200 --samples 4 --model M
