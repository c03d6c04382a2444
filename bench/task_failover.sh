#!/usr/bin/env bash
# What a failure costs under each restart strategy: the running sum (p=2,
# checkpoints every 1 s; its sum subtasks fail every FAIL_EVERY records
# after a checkpoint completed) with --failover region and task, under
# at-least-once and at-most-once, each also run without failures; the
# configurations alternate run by run (REPEAT rounds, default 3). Prints the
# median run of each: wall time without and with failures, restarts, records
# dropped in flight (task failover), records lost (at-most-once), and output
# records against the input lines (replayed records above; below, under
# at-most-once, also the uncommitted output of every restarted sink, which
# the transactional file sink discards), with peak RSS.
#
#   LINES=10000000 FAIL_EVERY=2500000 bash bench/task_failover.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
WEIR=${WEIR:-build/weir}
REPEAT=${REPEAT:-3}
LINES=${LINES:-10000000}
FAIL_EVERY=${FAIL_EVERY:-$((LINES / 4))}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$WEIR" generate running-sum-input --lines "$LINES" --keys 100000 --output "$tmp/in.txt" > /dev/null

run() {  # failover mode [extra args]; prints: wall_s restarts dropped lost output_records peak_rss_mb
  local failover=$1 mode=$2; shift 2
  rm -rf "$tmp/out"
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$WEIR" example running-sum --input "$tmp/in.txt" --output "$tmp/out" \
    -p 2 --checkpoint-interval 1s --mode "$mode" --failover "$failover" "$@" > "$tmp/log" 2>&1
  read -r wall rss < "$tmp/time"
  awk -v w="$wall" -v r="$rss" '/^restarts:/ {n = $2} /^records dropped in flight/ {d = $NF} /^records lost/ {l = $NF}
       /^output records:/ {o = $3; sub(/,/, "", o)}
       END {printf "%.2f %d %d %d %d %.1f\n", w, n, d, l, o, r / 1024}' "$tmp/log"
}

configs="region:at-least-once task:at-least-once region:at-most-once task:at-most-once"
runs=$(mktemp -d)
for i in $(seq "$REPEAT"); do
  for c in $configs; do
    run "${c%%:*}" "${c##*:}" >> "$runs/$c"
    run "${c%%:*}" "${c##*:}" --fail-every "$FAIL_EVERY" --seed "$i" >> "$runs/$c-failing"
  done
done
printf "%-8s %-14s %8s %14s %9s %9s %9s %9s %14s %8s\n" failover mode wall_s wall_s_failing extra_s restarts \
  dropped lost output-input rss_mb
for c in $configs; do
  base=$(median "$REPEAT" < "$runs/$c" | awk '{print $1}')
  median "$REPEAT" < "$runs/$c-failing" |
    awk -v f="${c%%:*}" -v m="${c##*:}" -v b="$base" -v n="$LINES" \
      '{printf "%-8s %-14s %8.2f %14.2f %9.2f %9d %9d %9d %14d %8.1f\n", f, m, b, $1, $1 - b, $2, $3, $4, $5 - n, $6}'
done
rm -rf "$runs"
