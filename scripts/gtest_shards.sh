#!/usr/bin/env bash
# Runs a googletest binary as SHARDS processes at once, each a share of its
# tests (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX), and prints each shard's
# report when all have ended. Fails when a shard fails or finds no tests,
# naming the shard; more arguments go to the binary (after --gtest_brief=1).
#
#   scripts/gtest_shards.sh SHARDS BINARY [ARGS...]
set -uo pipefail
if [ $# -lt 2 ] || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "gtest_shards: usage: gtest_shards.sh SHARDS BINARY [ARGS...] (SHARDS a positive number)" >&2
  exit 2
fi
SHARDS=$1
BINARY=$2
shift 2
if [ ! -x "$BINARY" ]; then
  echo "gtest_shards: $BINARY: not an executable file" >&2
  exit 2
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
for ((i = 0; i < SHARDS; i++)); do
  GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=$i "$BINARY" --gtest_brief=1 "$@" >"$logs/$i" 2>&1 &
  pids+=($!)
done
failed=0
for ((i = 0; i < SHARDS; i++)); do
  wait "${pids[$i]}"
  rc=$?
  cat "$logs/$i"
  if [ "$rc" -ne 0 ]; then
    echo "gtest_shards: $BINARY shard $((i + 1)) of $SHARDS failed (exit $rc)" >&2
    failed=1
  elif ! grep -q "^\[  PASSED  \] [1-9]" "$logs/$i"; then
    echo "gtest_shards: $BINARY shard $((i + 1)) of $SHARDS ran no test" >&2
    failed=1
  fi
done
exit $failed
