#!/usr/bin/env bash
# Scaling on this machine: Nexmark queries at parallelism 1 and 2, wall-clock
# events/s of the whole job (generation included), runs of the two
# parallelisms alternating, medians of REPEAT; prints p=2 / p=1.
#
#   bash bench/scaling.sh
#   QUERIES="q0 q5 q18" EVENTS=5000000 REPEAT=5 bash bench/scaling.sh
set -euo pipefail
WEIR=${WEIR:-build/weir}
REPEAT=${REPEAT:-5}
EVENTS=${EVENTS:-5000000}
QUERIES=${QUERIES:-"q0 q5 q18"}

. "$(dirname "$0")/lib.sh"

printf "%-5s %14s %14s %8s %14s %14s\n" query p1_events/s p2_events/s p2/p1 p1_rss_mb p2_rss_mb
for q in $QUERIES; do
  runs1=$(mktemp)
  runs2=$(mktemp)
  for i in $(seq "$REPEAT"); do
    for p in 1 2; do
      out=$("$WEIR" nexmark --query "$q" --events "$EVENTS" --parallelism "$p" \
        --checkpoint-interval 1s --mode exactly-once 2>&1)
      eps=$(echo "$out" | awk '/^events\/s:/ {print $2}')
      rss=$(echo "$out" | awk '/^peak rss/ {print $3}')
      if [ "$p" = 1 ]; then echo "$eps $rss" >> "$runs1"; else echo "$eps $rss" >> "$runs2"; fi
    done
  done
  a=$(median "$REPEAT" < "$runs1")
  b=$(median "$REPEAT" < "$runs2")
  echo "$a $b" | awk -v q="$q" '{printf "%-5s %14s %14s %8.2f %14s %14s\n", q, $1, $3, $3 / $1, $2, $4}'
  rm -f "$runs1" "$runs2"
done
