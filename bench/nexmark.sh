#!/usr/bin/env bash
# Nexmark throughput: each implemented query REPEAT times (default 3) on
# EVENTS events (default 10 M) with exactly-once checkpoints every 1 s;
# prints the median run by events/s per core, with peak RSS.
set -euo pipefail
WEIR=${WEIR:-build/weir}
REPEAT=${REPEAT:-3}
EVENTS=${EVENTS:-10000000}
PARALLELISM=${PARALLELISM:-1}
QUERIES=${QUERIES:-"q0 q1 q2 q3 q4 q5 q6 q7 q8 q9 q11 q12 q13 q14 q15 q16 q17 q18 q19 q20 q21 q22"}
printf "%-5s %14s %10s %8s %12s %10s\n" query events/s/core events/s cores checkpoints peak_rss_mb
for q in $QUERIES; do
  for i in $(seq "$REPEAT"); do
    out=$("$WEIR" nexmark --query "$q" --events "$EVENTS" \
      --parallelism "$PARALLELISM" --checkpoint-interval 1s --mode exactly-once 2>&1)
    per_core=$(echo "$out" | awk '/events\/s per core/ {print $4}')
    eps=$(echo "$out" | awk '/^events\/s:/ {print $2}')
    cores=$(echo "$out" | awk '/cpu time/ {gsub(/\(/,"",$5); print $5}')
    cps=$(echo "$out" | awk '/checkpoints completed/ {print $3}')
    rss=$(echo "$out" | awk '/^peak rss/ {print $3}')
    echo "$per_core $eps $cores $cps $rss"
  done | sort -n | awk -v r="$REPEAT" -v q="$q" 'NR == int((r + 1) / 2) {printf "%-5s %14s %10s %8s %12s %10s\n", q, $1, $2, $3, $4, $5}'
done
