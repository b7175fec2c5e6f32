#!/usr/bin/env bash
# Peak resident memory of a calculator trainer: Q questions a step (gradient_accumulation_steps 2Q, 8Q extra
# rollouts; otherwise the recipe as measured, CALCULATOR_384 of ../calculator-step.sh), STEPS steps, from a
# copy of a finished warm start, RSS sampled every second.
# Usage: WARM=runs/calcwu_const_s0/warm_start trainer_rss.sh Q [STEPS] [TAG]   (OUT: runs/)
set -u
Q=$1; STEPS=${2:-2}; TAG=${3:-q$Q}
OUT=${OUT:-runs}
WARM=${WARM:?the warm_start folder of a finished calculator run}
run=$OUT/$TAG
rm -rf "$run"; mkdir -p "$run"; cp -r "$WARM" "$run/"
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
source "$(dirname "$0")/../calculator-step.sh"
mcp-rl train --recipe calculator -o "$run" --resume "${CALCULATOR_384[@]}" --set trainer.max_steps="$STEPS" \
  --set trainer.save_steps=1000 --set trainer.gradient_accumulation_steps=$((2 * Q)) \
  --set grpo.max_extra_rollouts=$((8 * Q)) > "$run.log" 2>&1 &
pid=$!
while kill -0 $pid 2>/dev/null; do
  echo "$(date +%s) $(ps -o rss= -p $pid)" >> "$run.rss"; sleep 1
done
sort -k2 -n "$run.rss" | tail -1 | awk '{printf "peak RSS %.2f GiB\n", $2/1048576}' | tee "$run.peak"
