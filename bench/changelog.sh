#!/usr/bin/env bash
# What a checkpoint costs a large heap state, full against changelog: the
# Nexmark QUERIES (default q18 q19) on each of EVENTS_LIST (default 1 M, 5 M,
# 20 M events) at p=1, without checkpoints (none), with full exactly-once
# checkpoints every 1 s (full), and with changelog checkpoints (changelog,
# --changelog), the three alternating run by run, REPEAT times each (default
# 3). Prints the median run by events/s per core, its peak RSS, its
# checkpoints, their mean duration, and the mean and largest bytes one
# checkpoint wrote (new bytes: a changelog checkpoint's delta or base).
# ARGS adds flags to every run.
set -euo pipefail
WEIR=${WEIR:-build/weir}
REPEAT=${REPEAT:-3}
QUERIES=${QUERIES:-"q18 q19"}
EVENTS_LIST=${EVENTS_LIST:-"1000000 5000000 20000000"}
read -r -a EXTRA <<< "${ARGS:-}"

. "$(dirname "$0")/lib.sh"

# One run's line: events/s per core, peak RSS (MB), checkpoints, mean
# checkpoint ms, mean new MB per checkpoint, largest new MB.
run() {
  local q=$1 events=$2 kind=$3
  local mode=exactly-once flags=()
  case "$kind" in
    none) mode=none ;;
    changelog) flags=(--changelog) ;;
  esac
  "$WEIR" nexmark --query "$q" --events "$events" --parallelism 1 --checkpoint-interval 1s --mode "$mode" \
    ${flags[@]+"${flags[@]}"} ${EXTRA[@]+"${EXTRA[@]}"} 2>&1 |
    awk '/events\/s per core/ {pc = $4} /^peak rss/ {rss = $3}
         /^checkpoint [0-9]+:/ {n++; ms += $3; b = $7; gsub(/\(/, "", b); b += 0; nb += b; if (b > big) big = b}
         END {printf "%s %s %d %.0f %.1f %.1f\n", pc, rss, n, n ? ms / n : 0, n ? nb / n / 1048576 : 0, big / 1048576}'
}

printf "%-5s %9s %-10s %14s %12s %12s %11s %14s %14s\n" query events kind events/s/core peak_rss_mb checkpoints \
  mean_ms mean_new_mb max_new_mb
for q in $QUERIES; do
  for events in $EVENTS_LIST; do
    declare -A runs=()
    for i in $(seq "$REPEAT"); do
      for kind in none full changelog; do
        runs[$kind]+="$(run "$q" "$events" "$kind")"$'\n'
      done
    done
    for kind in none full changelog; do
      printf "%s" "${runs[$kind]}" | median "$REPEAT" |
        awk -v q="$q" -v e="$events" -v k="$kind" \
          '{printf "%-5s %9s %-10s %14s %12s %12s %11s %14s %14s\n", q, e, k, $1, $2, $3, $4, $5, $6}'
    done
    unset runs
  done
done
