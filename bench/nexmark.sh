#!/usr/bin/env bash
# Nexmark throughput: each implemented query REPEAT times (default 3) on
# EVENTS events (default 10 M) with exactly-once checkpoints every 1 s;
# prints the median run by events/s per core, with peak RSS.
#
# With LIMIT=path/to/limit (the hand-written single-threaded loop of
# ../shared/nexmark-limit, built by its build.sh; LIMIT=auto builds it into
# $HOME/limit when missing), each query the loop also computes runs beside
# weir, alternating run by run, and the table adds the loop's events/s (one
# thread, so per core), weir's share of it, and the loop's peak RSS. Both
# use the same generator configuration (10 M events/s of event time).
#
# STATE=rocksdb runs weir on the RocksDB backend; MODE=none runs without
# checkpoints (what checkpointing costs a query); ARGS adds flags to every
# weir run (e.g. ARGS="--checkpoint-dir /tmp/chk" for file checkpoints).
set -euo pipefail
WEIR=${WEIR:-build/weir}
REPEAT=${REPEAT:-3}
EVENTS=${EVENTS:-10000000}
PARALLELISM=${PARALLELISM:-1}
QUERIES=${QUERIES:-"q0 q1 q2 q3 q4 q5 q6 q7 q8 q9 q11 q12 q13 q14 q15 q16 q17 q18 q19 q20 q21 q22"}
LIMIT=${LIMIT:-}
STATE=${STATE:-heap}
MODE=${MODE:-exactly-once}
read -r -a EXTRA <<< "${ARGS:-}"
# The queries the loop implements.
LIMIT_QUERIES=" q0 q1 q2 q3 q4 q5 q7 q8 q11 q17 q18 q19 q20 q21 q22 "

if [ "$LIMIT" = auto ]; then
  LIMIT=$HOME/limit
  if [ ! -x "$LIMIT" ]; then
    dir=$(cd "$(dirname "$0")/../../shared/nexmark-limit" && pwd)
    (cd "$dir" && LIMIT_BIN="$LIMIT" ./build.sh >/dev/null)
  fi
fi
if [ -n "$LIMIT" ] && [ ! -x "$LIMIT" ]; then
  echo "bench/nexmark.sh: LIMIT=$LIMIT is not an executable" >&2
  exit 2
fi

. "$(dirname "$0")/lib.sh"

if [ -n "$LIMIT" ]; then
  printf "%-5s %14s %10s %8s %12s %10s %14s %8s %10s\n" query events/s/core events/s cores checkpoints \
    peak_rss_mb loop_events/s weir/loop loop_rss_mb
else
  printf "%-5s %14s %10s %8s %12s %10s\n" query events/s/core events/s cores checkpoints peak_rss_mb
fi
for q in $QUERIES; do
  weir_runs=$(mktemp)
  loop_runs=$(mktemp)
  for i in $(seq "$REPEAT"); do
    out=$("$WEIR" nexmark --query "$q" --events "$EVENTS" \
      --parallelism "$PARALLELISM" --checkpoint-interval 1s --mode "$MODE" --state "$STATE" \
      ${EXTRA[@]+"${EXTRA[@]}"} 2>&1)
    echo "$out" | nexmark_fields >> "$weir_runs"
    if [ -n "$LIMIT" ] && [[ "$LIMIT_QUERIES" == *" $q "* ]]; then
      # One line from the loop on stdout; GNU time's peak RSS (KiB) on stderr.
      line=$( { /usr/bin/time -f "rss_kb=%M" "$LIMIT" "$q" "$EVENTS"; } 2>&1)
      loop_eps=$(echo "$line" | sed -n 's/.*events_per_s=\([0-9]*\).*/\1/p')
      loop_rss=$(echo "$line" | sed -n 's/^rss_kb=\([0-9]*\)$/\1/p')
      echo "$loop_eps $(awk -v k="$loop_rss" 'BEGIN {printf "%.1f", k / 1024}')" >> "$loop_runs"
    fi
  done
  w=$(median "$REPEAT" < "$weir_runs")
  if [ -s "$loop_runs" ]; then
    l=$(median "$REPEAT" < "$loop_runs")
    echo "$w $l" | awk -v q="$q" '{printf "%-5s %14s %10s %8s %12s %10s %14s %8.2f %10s\n", q, $1, $2, $3, $4, $5, $6, $1 / $6, $7}'
  elif [ -n "$LIMIT" ]; then
    echo "$w" | awk -v q="$q" '{printf "%-5s %14s %10s %8s %12s %10s %14s %8s %10s\n", q, $1, $2, $3, $4, $5, "-", "-", "-"}'
  else
    echo "$w" | awk -v q="$q" '{printf "%-5s %14s %10s %8s %12s %10s\n", q, $1, $2, $3, $4, $5}'
  fi
  rm -f "$weir_runs" "$loop_runs"
done
