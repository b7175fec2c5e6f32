# Sourced by each recipe's run.sh, after it sets RECIPE, TAG (the prefix of its run and report names) and
# WARM_SETS (the overrides that train its warm start: the recipe as it shipped before), and defines
# `prepare` (data it evaluates on) and `evaluate NAME MODEL` (writes $OUT/eval/${TAG}_NAME.*.json), or
# sets both to the club's below.
# Arguments: ARM SEED.
#   warm  the warm start, evaluated alone (the lr-0 control), and the recipe as it shipped before
#   a     the calculator's step (calculator-step.sh) for 20 steps from a copy of that warm start, seed SEED,
#         evaluated at its checkpoints 10 and 20
set -u
ARM=$1 SEED=${2:-0} OUT=${OUT:-runs}
export OMP_NUM_THREADS=${THREADS:-1} HF_HUB_OFFLINE=1
source "$(dirname "${BASH_SOURCE[0]}")/calculator-step.sh"
case $ARM in
  a) SETS=("${CALCULATOR_STEP[@]}") ;;
  warm) ;;
  *) echo "unknown arm $ARM: warm or a" >&2; exit 2 ;;
esac
club_prepare() { [ -d "$OUT/club1" ] || python -m mcp_rl.datasets.club --seed 1 --out "$OUT/club1"; }
club_evaluate() {  # name model: 200 of the club's test tasks, and of an unseen club (seed 1)
  mcp-rl eval --recipe "$RECIPE" --limit 200 --model "$2" --output "$OUT/eval/${TAG}_$1.test.json"
  mcp-rl eval --recipe "$RECIPE" --limit 200 --model "$2" --set data.eval="$OUT/club1" \
    --set data.corpus="$OUT/club1/seed.db" --output "$OUT/eval/${TAG}_$1.club1.json"
}
mkdir -p "$OUT/eval"
prepare
if [ "$ARM" = warm ]; then
  mcp-rl train --recipe "$RECIPE" -o "$OUT/${TAG}_warm" "${WARM_SETS[@]}"
  evaluate warm "$OUT/${TAG}_warm/warm_start/final"  # the warm start alone: the lr-0 control
  [ "${EVALUATE_SHIPPED:-1}" = 1 ] && evaluate shipped "$OUT/${TAG}_warm/final"
  exit 0
fi
RUN=$OUT/${TAG}_${ARM}_s$SEED
mkdir -p "$RUN" && cp -r "$OUT/${TAG}_warm/warm_start" "$RUN/"  # --resume loads it, does not retrain it
mcp-rl train --recipe "$RECIPE" -o "$RUN" --resume --set trainer.max_steps=20 --set trainer.seed="$SEED" "${SETS[@]}"
for step in 10 20; do evaluate "${ARM}_s${SEED}_grpo$step" "$RUN/checkpoint-$step"; done
