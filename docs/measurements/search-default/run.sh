#!/usr/bin/env bash
# #23's target for the default recipe: `search` (GRPO only) no worse than 0.617 / 0.620 / 0.473 on our world,
# another seed of it and chronicle, with the code as it is now. The README's default-run commands, at 1 thread.
# Usage: OUT=runs run.sh
set -eu
OUT=${OUT:-runs}
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$OUT/eval"
mcp-rl train --recipe search -o "$OUT/search_check" > "$OUT/search_check.log" 2>&1
[ -d "$OUT/world1" ] || python -m mcp_rl.datasets.fictional --seed 1 --out "$OUT/world1"
model=$OUT/search_check/final
mcp-rl eval --recipe search --model "$model" --limit 300 --output "$OUT/eval/search_check.test.json"
mcp-rl eval --recipe search --model "$model" --limit 300 --corpus "$OUT/world1/corpus.jsonl" \
  --qa "$OUT/world1/test.jsonl" --output "$OUT/eval/search_check.world1.json"
mcp-rl eval --recipe search --model "$model" --limit 300 --corpus chronicle --qa chronicle \
  --output "$OUT/eval/search_check.chronicle.json"
