#!/usr/bin/env bash
# #23: grpo.min_informative_groups 1 (no optimizer step when no group has a reward spread) on sql, one change
# against arm a: steps 21-40 resumed from a copy of arm a's checkpoint 20 (run.sh a SEED first), seed SEED;
# greedy evaluation of checkpoint 40 on the club's test split and the unseen club, as run.sh does.
# Usage: min-informative.sh SEED   (OUT defaults to runs/)
set -u
SEED=$1 OUT=${OUT:-runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
source "$(dirname "$0")/../calculator-step.sh"
RUN=$OUT/sql_m_s$SEED
mkdir -p "$RUN" && cp -r "$OUT/sql_a_s$SEED/warm_start" "$OUT/sql_a_s$SEED/checkpoint-20" "$RUN/"
mcp-rl train --recipe sql -o "$RUN" --resume --set trainer.max_steps=40 --set trainer.seed="$SEED" \
  "${CALCULATOR_STEP[@]}" --set grpo.min_informative_groups=1
mcp-rl eval --recipe sql --limit 200 --model "$RUN/checkpoint-40" --output "$OUT/eval/sql_m_s${SEED}_grpo40.test.json"
mcp-rl eval --recipe sql --limit 200 --model "$RUN/checkpoint-40" --set data.eval="$OUT/club1" \
  --set data.corpus="$OUT/club1/seed.db" --output "$OUT/eval/sql_m_s${SEED}_grpo40.club1.json"
