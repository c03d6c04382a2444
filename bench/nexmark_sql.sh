#!/usr/bin/env bash
# Nexmark from SQL against the same query in C++: each query with SQL text
# (weir nexmark --api sql), REPEAT times (default 5) each way, alternating
# run by run, on EVENTS events (default 10 M) at p=1 with exactly-once
# checkpoints every 1 s. Prints the medians of events/s per core and peak
# RSS, and SQL's share of the DataStream version's events/s per core (the
# goal: SQL within 1.5x, a share of at least 67 %).
#   bench/nexmark_sql.sh; QUERIES="q0 q2" (default: every query with SQL
#   text in examples/nexmark/sql), REPEAT, EVENTS, WEIR
# With BASELINE=path/to/another/weir it compares SQL with SQL instead: that
# binary's (before a change) against WEIR's (after it), alternating run by
# run, and prints after's events/s as a share of before's.
set -euo pipefail
WEIR=${WEIR:-build/weir}
REPEAT=${REPEAT:-5}
EVENTS=${EVENTS:-10000000}
QUERIES=${QUERIES:-$(cd "$(dirname "$0")/../examples/nexmark/sql" && ls q*.sql | sed 's/\.sql$//' | sort -V | tr '\n' ' ')}
OUT=$(mktemp -d /tmp/weir-nexmark-sql.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

BASELINE=${BASELINE:-}

run() {  # QUERY API [BINARY]: prints "events/s-per-core peak-rss-MB"
  "${3:-$WEIR}" nexmark --query "$1" --api "$2" --events "$EVENTS" --checkpoint-interval 1s -p 1 >"$OUT/run.txt"
  awk '/^events\/s per core:/ { e = $4 } /^peak rss:/ { r = $3 } END { print e, r }' "$OUT/run.txt"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "Nexmark, $EVENTS events, p=1, exactly-once checkpoints every 1 s; medians of $REPEAT runs each, alternating"
if [ -n "$BASELINE" ]; then
  echo "SQL before ($BASELINE) and after ($WEIR)"
  printf "%-5s %22s %18s %22s %18s %12s\n" query "before events/s/core" "before RSS MB" "after events/s/core" "after RSS MB" "after/before"
else
  printf "%-5s %22s %18s %22s %18s %12s\n" query "DataStream events/s/core" "DataStream RSS MB" "SQL events/s/core" "SQL RSS MB" "SQL share"
fi
for q in $QUERIES; do
  : >"$OUT/ds" && : >"$OUT/sql"
  for _ in $(seq "$REPEAT"); do
    if [ -n "$BASELINE" ]; then
      run "$q" sql "$BASELINE" >>"$OUT/ds"
    else
      run "$q" datastream >>"$OUT/ds"
    fi
    run "$q" sql >>"$OUT/sql"
  done
  ds=$(cut -d' ' -f1 "$OUT/ds" | median); ds_rss=$(cut -d' ' -f2 "$OUT/ds" | median)
  sql=$(cut -d' ' -f1 "$OUT/sql" | median); sql_rss=$(cut -d' ' -f2 "$OUT/sql" | median)
  share=$(awk -v a="$sql" -v b="$ds" 'BEGIN { printf "%.0f", 100 * a / b }')
  printf "%-5s %22s %18s %22s %18s %11s%%\n" "$q" "$ds" "$ds_rss" "$sql" "$sql_rss" "$share"
done
