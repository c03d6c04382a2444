#!/usr/bin/env bash
# What each delivery guarantee costs: Nexmark queries under every --mode,
# the modes alternating run by run (REPEAT rounds, default 3) so that a
# shared machine's drift hits them alike; prints the median run of each by
# events/s per core, with peak RSS, and its ratio to MODES' first.
#
#   QUERIES="q0 q1 q5" MODES="none at-most-once at-least-once exactly-once" \
#     EVENTS=5000000 bash bench/delivery_modes.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
WEIR=${WEIR:-build/weir}
REPEAT=${REPEAT:-3}
EVENTS=${EVENTS:-5000000}
QUERIES=${QUERIES:-"q0 q1 q4 q5"}
MODES=${MODES:-"none at-most-once at-least-once exactly-once"}
read -r -a MODE_LIST <<< "$MODES"

printf "%-5s %-14s %14s %8s %12s %10s\n" query mode events/s/core vs_${MODE_LIST[0]} checkpoints peak_rss_mb
for q in $QUERIES; do
  runs=$(mktemp -d)
  for i in $(seq "$REPEAT"); do
    for m in "${MODE_LIST[@]}"; do
      "$WEIR" nexmark --query "$q" --events "$EVENTS" --checkpoint-interval 1s --mode "$m" 2>&1 |
        nexmark_fields >> "$runs/$m"
    done
  done
  base=$(median "$REPEAT" < "$runs/${MODE_LIST[0]}" | awk '{print $1}')
  for m in "${MODE_LIST[@]}"; do
    median "$REPEAT" < "$runs/$m" |
      awk -v q="$q" -v m="$m" -v b="$base" '{printf "%-5s %-14s %14s %8.2f %12s %10s\n", q, m, $1, $1 / b, $4, $5}'
  done
  rm -rf "$runs"
done
