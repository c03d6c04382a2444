#!/usr/bin/env bash
# Batch against streaming execution of the same bounded jobs: Nexmark
# queries and the running sum, in streaming, batch (keyed operators on
# sorted input) and batch with --no-sorted-inputs (keyed state in the heap
# backend) for the queries, the modes alternating run by run (REPEAT
# rounds, default 3); prints the median run of each by events/s per core,
# with peak RSS and the bytes that crossed network edges (in batch: written
# to result files and read back). Then the cost of a failure in the last
# stage: the running sum with one injected failure per sum subtask, wall
# time against a run without, in both modes (streaming restores the region
# from its latest checkpoint; batch re-runs the failed subtask from its
# input files).
#
#   QUERIES="q4 q5 q9 q18" EVENTS=5000000 LINES=5000000 bash bench/batch_vs_streaming.sh
# (QUERIES=" " runs only the running sum.)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
WEIR=${WEIR:-build/weir}
REPEAT=${REPEAT:-3}
EVENTS=${EVENTS:-5000000}
LINES=${LINES:-5000000}
QUERIES=${QUERIES:-"q4 q5 q9 q18"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Bytes written to network edges, summed over the vertex lines of a run's
# summary ("... out N (M bytes) ...").
edge_bytes() { grep -o '([0-9]* bytes)' | tr -d '(' | awk '{b += $1} END {print b + 0}'; }

mode_args() {
  case $1 in
    batch) echo "--runtime-mode batch --result-dir $tmp/results" ;;
    batch-unsorted) echo "--runtime-mode batch --result-dir $tmp/results --no-sorted-inputs" ;;
    *) echo "--checkpoint-interval 1s" ;;
  esac
}

printf "%-12s %-14s %14s %9s %10s %14s\n" job mode events/s/core vs_stream peak_rss_mb edge_mb
for q in $QUERIES; do
  runs=$(mktemp -d)
  for i in $(seq "$REPEAT"); do
    for m in streaming batch batch-unsorted; do
      # shellcheck disable=SC2046
      out=$("$WEIR" nexmark --query "$q" --events "$EVENTS" $(mode_args $m) 2>&1)
      echo "$(echo "$out" | nexmark_fields) $(echo "$out" | edge_bytes)" >> "$runs/$m"
    done
  done
  base=$(median "$REPEAT" < "$runs/streaming" | awk '{print $1}')
  for m in streaming batch batch-unsorted; do
    median "$REPEAT" < "$runs/$m" |
      awk -v q="$q" -v m="$m" -v b="$base" '{printf "%-12s %-14s %14s %9.2f %10s %14.1f\n", q, m, $1, $1 / b, $5, $6 / 1048576}'
  done
  rm -rf "$runs"
done

# The running sum over LINES lines at parallelism 2: events/s per core from
# the process's CPU time, peak RSS from /usr/bin/time.
"$WEIR" generate running-sum-input --lines "$LINES" --keys 100000 --output "$tmp/in.txt" > /dev/null
run_sum() {  # mode, extra args...; prints: lines/s/core wall_s peak_rss_mb edge_mb
  local m=$1; shift
  rm -rf "$tmp/out" "$tmp/results"
  # shellcheck disable=SC2046
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$WEIR" example running-sum --input "$tmp/in.txt" \
    --output "$tmp/out" -p 2 $(mode_args "$m") "$@" > "$tmp/log" 2>&1
  read -r wall user sys rss < "$tmp/time"
  awk -v n="$LINES" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v e="$(edge_bytes < "$tmp/log")" \
    'BEGIN {printf "%d %.2f %d %.1f\n", n / (u + s), w, r / 1024, e / 1048576}'
}
runs=$(mktemp -d)
for i in $(seq "$REPEAT"); do
  for m in streaming batch; do
    run_sum "$m" >> "$runs/$m"
    run_sum "$m" --fail-every $((LINES / 4)) --seed "$i" >> "$runs/$m-failure"
  done
done
base=$(median "$REPEAT" < "$runs/streaming" | awk '{print $1}')
for m in streaming batch; do
  median "$REPEAT" < "$runs/$m" |
    awk -v m="$m" -v b="$base" '{printf "%-12s %-14s %14s %9.2f %10s %14.1f\n", "running-sum", m, $1, $1 / b, $3, $4}'
done
printf "\n%-10s %14s %16s %10s\n" mode wall_s wall_s_failure extra_s
for m in streaming batch; do
  a=$(median "$REPEAT" < "$runs/$m" | awk '{print $2}')
  b=$(sort -n -k2 "$runs/$m-failure" | awk -v r="$REPEAT" 'NR == int((r + 1) / 2) {print $2}')
  awk -v m="$m" -v a="$a" -v b="$b" 'BEGIN {printf "%-10s %14.2f %16.2f %10.2f\n", m, a, b, b - a}'
done
rm -rf "$runs"
