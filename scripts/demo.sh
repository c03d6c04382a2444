#!/usr/bin/env bash
# The demo: the running-sum job on generated input, with exactly-once
# checkpoints and injected task failures, then a check that the committed
# output counts every input record exactly once.
#
#   scripts/demo.sh [WEIR [DIR]]
#
# WEIR: the weir executable (build/weir). DIR: where the input, checkpoints,
# output and the job's log go: a new directory under $TMPDIR unless named
# (DEMO_DIR=... or the second argument); a named one must be empty, missing,
# or an earlier demo's. Exit code: 0 when the check holds, 1 when it does not,
# 2 for a bad argument or a step that failed.
set -euo pipefail
WEIR=${1:-build/weir}
DIR=${2:-${DEMO_DIR:-}}

fail() {
  echo "demo: $*" >&2
  exit 2
}

[ -x "$WEIR" ] || fail "$WEIR is not an executable (build it: cmake --build build --target weir)"
if [ -z "$DIR" ]; then
  DIR=$(mktemp -d "${TMPDIR:-/tmp}/weir-demo.XXXXXX")
elif [ -e "$DIR" ]; then
  [ -d "$DIR" ] || fail "$DIR is not a directory"
  if [ -n "$(ls -A "$DIR")" ] && [ ! -e "$DIR/.weir-demo" ]; then
    fail "$DIR is not empty and holds no earlier demo: name an empty or new directory"
  fi
  find "$DIR" -mindepth 1 -delete
fi
mkdir -p "$DIR"
touch "$DIR/.weir-demo"
LOG="$DIR/job.log"

echo "[1/3] generating input: 2,000,000 lines over 10,000 keys (every 1000th malformed) and 500,000 more"
"$WEIR" generate running-sum-input --output "$DIR/input-a.txt" --lines 2000000 --keys 10000 --bad-every 1000 \
  --seed 42 || fail "generating the input failed"
"$WEIR" generate running-sum-input --output "$DIR/input-b.txt" --lines 500000 --keys 500 --seed 43 ||
  fail "generating the input failed"

echo "[2/3] running the job: parallelism 4, exactly-once checkpoints every 100 ms, a task failure every ~150,000 records"
echo "      (its log: $LOG)"
if ! "$WEIR" example running-sum --input "$DIR/input-a.txt" --input "$DIR/input-b.txt" \
  --output "$DIR/output" --parallelism 4 --checkpoint-dir "$DIR/checkpoints" \
  --checkpoint-interval 100ms --fail-every 150000 --seed 7 2>"$LOG"; then
  tail -5 "$LOG" >&2
  fail "the job failed (its log: $LOG)"
fi

echo "[3/3] checking the committed output against the input"
code=0
"$WEIR" verify running-sum --input "$DIR/input-a.txt" --input "$DIR/input-b.txt" --output "$DIR/output" || code=$?
[ "$code" -le 1 ] || fail "the check could not run (exit code $code)"
echo
if [ "$code" -eq 0 ]; then
  echo "demo: PASSED. Through the injected task failures and restarts above, every input record was counted exactly once."
else
  echo "demo: FAILED. The committed output does not count every input record exactly once (see above)."
fi
echo "      output: $DIR/output (part-<subtask>-<n> files; rejects-<subtask>-<n> hold malformed lines)"
[ "$code" -eq 0 ] || exit 1
