# Sourced by the calculator measurement scripts: greedy evaluation on 200 tasks of the test and of errands,
# as $OUT/eval/LABEL.{test,errands}.json, and a warm start trained on its own.
evaluate() {  # label model
  mcp-rl eval --recipe calculator --limit 200 --model "$2" --output "$OUT/eval/$1.test.json"
  mcp-rl eval --recipe calculator --limit 200 --model "$2" --set data.eval=errands --output "$OUT/eval/$1.errands.json"
}
evaluate_when_saved() {  # label checkpoint: waits for the trainer to finish writing it
  while [ ! -f "$2/trainer_state.json" ]; do sleep 30; done; sleep 20
  evaluate "$@"
}
warm_start_only() {  # run [--set FIELD=VALUE ...]: the recipe's run, stopped once its warm start is written
  local run=$1; shift
  mcp-rl train --recipe calculator -o "$run" --resume "$@" > "$run.log" 2>&1 &
  local pid=$!
  while [ ! -f "$run/warm_start/final/config.json" ]; do sleep 20; done; sleep 30
  kill "$pid"
}
