#!/usr/bin/env bash
# Runs each libFuzzer target of build-asan for SECONDS from its corpus in
# fuzz/corpus/, JOBS at a time (make fuzz). New inputs a target finds go to
# build-asan/corpus/<target>/, a crash to build-asan/crash-<target>-*; a
# target that crashes (or cannot run) prints the end of its log and fails
# the run.
#
#   scripts/fuzz.sh SECONDS JOBS TARGET...
set -uo pipefail
SECONDS_EACH=$1
JOBS=$2
shift 2
cd "$(dirname "$0")/.."

run_one() {
  local t=$1
  mkdir -p "build-asan/corpus/$t"
  if build-asan/fuzz_"$t" -max_total_time="$SECONDS_EACH" -artifact_prefix="build-asan/crash-$t-" \
    -print_final_stats=0 "build-asan/corpus/$t" "fuzz/corpus/$t" 2>"build-asan/fuzz_$t.log"; then
    echo "fuzz_$t: $SECONDS_EACH s, no crash"
  else
    echo "fuzz_$t: FAILED (build-asan/fuzz_$t.log):"
    tail -40 "build-asan/fuzz_$t.log"
    return 1
  fi
}

failed=0
running=0
for t in "$@"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
if [ "$failed" -ne 0 ]; then
  echo "fuzz: a target failed (above)"
  exit 1
fi
echo "fuzz: every target ran $SECONDS_EACH s without a crash"
