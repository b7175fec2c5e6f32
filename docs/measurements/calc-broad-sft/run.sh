#!/usr/bin/env bash
# #23: does mixing the warm start's supervised loss back in (grpo.sft_coef 1) keep the calculator's GRPO from
# dipping on errands? About 30 min on 2 cores.
# Usage: WARM=runs/calcwu_const_s0/warm_start run.sh   (a finished warm start, e.g. ../calc-warmup's run)
exec "$(dirname "$0")/../calc-two-seeds.sh" calcsft --set grpo.sft_coef=1
