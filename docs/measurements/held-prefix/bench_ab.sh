#!/usr/bin/env bash
# bench/generation.py (default batch, 16 x 4) with the shared-prefix change and without, alternating, 2 rounds.
# Usage: git worktree add /tmp/before COMMIT_BEFORE; bench_ab.sh   (OUT: runs/)
cd "$(git rev-parse --show-toplevel)" && mkdir -p "${OUT:-runs}"
for round in 1 2; do
  for side in after before; do
    if [ $side = before ]; then src=/tmp/before; else src=$PWD; fi
    (cd $src && PYTHONPATH=$src/src OMP_NUM_THREADS=2 python bench/generation.py 2>/dev/null | tail -1) \
      > ${OUT:-runs}/gen_${side}_$round.json
  done
done
