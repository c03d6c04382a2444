#!/usr/bin/env bash
# The demo: the running-sum job on generated input, with injected task
# failures, then a check that the committed output is exactly-once.
set -euo pipefail
WEIR=${1:-build/weir}
DIR=${DEMO_DIR:-demo-out}
rm -rf "$DIR"
mkdir -p "$DIR"

echo "== generating 2,000,000 input lines over 10,000 keys (every 1000th malformed) and a second input of 500,000"
"$WEIR" generate running-sum-input --output "$DIR/input-a.txt" --lines 2000000 --keys 10000 --bad-every 1000 --seed 42
"$WEIR" generate running-sum-input --output "$DIR/input-b.txt" --lines 500000 --keys 500 --seed 43

echo "== running: parallelism 4, exactly-once checkpoints every 100ms, a task failure every ~150,000 records"
"$WEIR" example running-sum --input "$DIR/input-a.txt" --input "$DIR/input-b.txt" \
  --output "$DIR/output" --parallelism 4 --checkpoint-dir "$DIR/checkpoints" \
  --checkpoint-interval 100ms --fail-every 150000 --seed 7 --verbose

echo "== checking the committed output against the input"
"$WEIR" verify running-sum --input "$DIR/input-a.txt" --input "$DIR/input-b.txt" --output "$DIR/output"
echo "== output in $DIR/output (part-<subtask>-<n> files; rejects-<subtask>-<n> hold malformed lines)"
