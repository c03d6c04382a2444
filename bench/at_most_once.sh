#!/usr/bin/env bash
# What at-most-once loses per failure: the running sum over LINES lines at
# RATE lines/s per source subtask, parallelism P, checkpoints every
# INTERVAL_MS, a failure injected after about FAIL_EVERY records per sum
# subtask (once a checkpoint completed in the attempt). Per run: the
# restarts, the records the job counted as lost, what `weir verify
# running-sum --at-most-once` finds missing from the committed output
# (they must be equal), lost per restart, and the bound per restart: the
# records P sources read in an interval plus the longest checkpoint, and
# two read-ahead batches (at most 1,535 records: kReadAheadRecords 1,024
# and one poll of 512 more) each. Peak RSS of the job. Medians
# of REPEAT runs by lost per restart.
#
#   bash bench/at_most_once.sh
#   RATE=10000 P=4 INTERVAL_MS=1000 FAIL_EVERY=40000 LINES=300000 REPEAT=3 bash bench/at_most_once.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
WEIR=${WEIR:-build/weir}
LINES=${LINES:-300000}
RATE=${RATE:-10000}
P=${P:-4}
INTERVAL_MS=${INTERVAL_MS:-1000}
FAIL_EVERY=${FAIL_EVERY:-40000}
REPEAT=${REPEAT:-3}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$WEIR" generate running-sum-input --output "$work/in.txt" --lines "$LINES" > /dev/null

printf "%-4s %8s %10s %10s %12s %12s %10s %10s\n" run restarts lost missing lost/restart bound/restart max_cp_ms rss_mb
runs=$(mktemp)
for i in $(seq "$REPEAT"); do
  rm -rf "$work/out"
  out=$(/usr/bin/time -f "peak_rss_kb %M" "$WEIR" example running-sum --input "$work/in.txt" --output "$work/out" \
    -p "$P" --mode at-most-once --rate "$RATE" --checkpoint-interval "${INTERVAL_MS}ms" \
    --fail-every "$FAIL_EVERY" --seed "$i" 2>&1)
  verify=$("$WEIR" verify running-sum --input "$work/in.txt" --output "$work/out" --at-most-once || true)
  echo "$verify" | grep -q "^at most once: yes" || { echo "run $i: $verify" >&2; exit 1; }
  restarts=$(echo "$out" | awk '/^restarts:/ {print $2}')
  lost=$(echo "$out" | awk -F': ' '/^records lost/ {print $NF}')
  max_cp=$(echo "$out" | sed -n 's/^checkpoints completed: .*max \([0-9]*\) ms.*/\1/p')
  rss=$(echo "$out" | awk '/peak_rss_kb/ {printf "%.1f", $2 / 1024}')
  missing=$(echo "$verify" | awk '/^records lost:/ {print $3}')
  lost=${lost:-0}
  per=$(( restarts > 0 ? lost / restarts : 0 ))
  bound=$(( (INTERVAL_MS + max_cp) * RATE * P / 1000 + 2 * 1535 * P ))
  printf "%-4s %8s %10s %10s %12s %12s %10s %10s\n" "$i" "$restarts" "$lost" "$missing" "$per" "$bound" "$max_cp" "$rss" |
    tee -a "$runs"
  [ "$lost" = "$missing" ] || { echo "run $i: the job counted $lost lost, the output lacks $missing" >&2; exit 1; }
done
echo "median by lost/restart:"
awk '{print $5, $0}' "$runs" | median "$REPEAT" | cut -d' ' -f2-
rm -f "$runs"
