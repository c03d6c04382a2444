#!/usr/bin/env bash
# Batch execution's keyed operators reading input sorted by key, against
# the sort's memory budget: the running sum (LINES lines over KEYS keys, p=2)
# in batch mode at each --sort-memory of BUDGETS, and for reference in
# batch mode without sorted inputs (state in the heap backend) and in
# streaming mode, alternating run by run (REPEAT rounds, default 3). Prints the
# median run of each by wall time: lines/s per core (CPU time), wall time,
# peak RSS, and the records sorted and bytes spilled by the sum's subtasks.
#
#   LINES=10000000 KEYS=1000000 BUDGETS="16mb 64mb 1gb" bash bench/batch_sort.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
WEIR=${WEIR:-build/weir}
REPEAT=${REPEAT:-3}
LINES=${LINES:-10000000}
KEYS=${KEYS:-1000000}
BUDGETS=${BUDGETS:-"16mb 64mb 1gb"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$WEIR" generate running-sum-input --lines "$LINES" --keys "$KEYS" --output "$tmp/in.txt" > /dev/null
run() {  # name, args...; prints: wall_s lines/s/core peak_rss_mb sorted spilled_mb
  rm -rf "$tmp/out" "$tmp/results"
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$WEIR" example running-sum --input "$tmp/in.txt" \
    --output "$tmp/out" -p 2 "$@" > "$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
  read -r wall user sys rss < "$tmp/time"
  # "vertex V sorted its input by key: N records, M bytes spilled in R runs"
  read -r sorted spilled < <(awk '/sorted its input by key/ {for (i = 1; i <= NF; ++i) {
      if ($i == "key:") n += $(i + 1); if ($i == "bytes") b += $(i - 1)}} END {print n + 0, b + 0}' "$tmp/log")
  awk -v n="$LINES" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v k="$sorted" -v b="$spilled" \
    'BEGIN {printf "%.2f %d %.1f %d %.1f\n", w, n / (u + s), r / 1024, k, b / 1048576}'
}
configs="streaming batch-unsorted"
for b in $BUDGETS; do configs="$configs batch-$b"; done
runs=$(mktemp -d)
for i in $(seq "$REPEAT"); do
  for c in $configs; do
    case $c in
      streaming) run --checkpoint-interval 1s >> "$runs/$c" ;;
      batch-unsorted) run --runtime-mode batch --result-dir "$tmp/results" --no-sorted-inputs >> "$runs/$c" ;;
      batch-*) run --runtime-mode batch --result-dir "$tmp/results" --sort-memory "${c#batch-}" >> "$runs/$c" ;;
    esac
  done
done
printf "%-14s %8s %14s %12s %12s %11s\n" config wall_s lines/s/core peak_rss_mb sorted spilled_mb
for c in $configs; do
  median "$REPEAT" < "$runs/$c" |
    awk -v c="$c" '{printf "%-14s %8.2f %14d %12.1f %12d %11.1f\n", c, $1, $2, $3, $4, $5}'
done
rm -rf "$runs"
