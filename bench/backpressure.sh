#!/usr/bin/env bash
# Checkpoints under sustained backpressure: the running sum over LINES lines
# at parallelism P, its sources reading RATE lines/s per subtask, its sink
# (a vertex of its own behind a rebalance) writing SLOWDOWN times slower,
# checkpoints every INTERVAL_MS, aligned, unaligned, and aligned first with
# a TIMEOUT_MS aligned-checkpoint timeout, each also with buffer debloating
# to DEBLOAT_MS of data in flight (MODES: aligned unaligned timeout
# aligned+debloat unaligned+debloat timeout+debloat); on the heap
# and on RocksDB, alternating, REPEAT runs each. Per run, from the
# JobManager's log (--verbose), leaving out the final checkpoint (it waits
# for the drain at the end of input): the checkpoints completed, the median, p99
# and largest of their durations and of their alignments (unaligned: the
# time the channels were recorded), the median channel state stored per
# checkpoint; the job's lines/s (what the sink allows: P * RATE / SLOWDOWN);
# peak RSS. Medians of the runs by median duration.
#
#   bash bench/backpressure.sh
#   P=4 RATE=10000 SLOWDOWN=5 LINES=200000 INTERVAL_MS=1000 REPEAT=3 MODES="aligned unaligned timeout" \
#     TIMEOUT_MS=100 bash bench/backpressure.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
WEIR=${WEIR:-build/weir}
LINES=${LINES:-200000}
RATE=${RATE:-10000}
SLOWDOWN=${SLOWDOWN:-5}
P=${P:-4}
INTERVAL_MS=${INTERVAL_MS:-1000}
REPEAT=${REPEAT:-3}
BACKENDS=${BACKENDS:-"heap rocksdb"}
MODES=${MODES:-"aligned unaligned timeout aligned+debloat unaligned+debloat"}
TIMEOUT_MS=${TIMEOUT_MS:-100}
DEBLOAT_MS=${DEBLOAT_MS:-1000}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$WEIR" generate running-sum-input --output "$work/in.txt" --lines "$LINES" > /dev/null

# The n-th percentile (nearest rank) of the numbers on stdin.
percentile() { sort -n | awk -v p="$1" '{v[NR] = $1} END {if (NR == 0) {print 0; exit} r = int((p * NR + 99) / 100); if (r < 1) r = 1; print v[r]}'; }

printf "%-16s %-8s %4s %11s %9s %9s %9s %11s %11s %12s %10s %8s\n" mode state run checkpoints dur_p50 dur_p99 \
  dur_max align_p50 align_max channel_kb lines/s rss_mb
for m in $MODES; do for b in $BACKENDS; do : > "$work/runs-$m-$b"; done; done
for i in $(seq "$REPEAT"); do
  for m in $MODES; do
    for b in $BACKENDS; do
      rm -rf "$work/out" "$work/state"
      case ${m%+debloat} in
        timeout) checkpointing=(--checkpointing unaligned --aligned-checkpoint-timeout "${TIMEOUT_MS}ms") ;;
        *) checkpointing=(--checkpointing "${m%+debloat}") ;;
      esac
      [[ $m == *+debloat ]] && checkpointing+=(--buffer-debloat --buffer-debloat-target "${DEBLOAT_MS}ms")
      /usr/bin/time -f "peak_rss_kb %M" "$WEIR" example running-sum --verbose --input "$work/in.txt" \
        --output "$work/out" -p "$P" --rate "$RATE" --sink-parallelism "$P" --sink-rate $(( RATE / SLOWDOWN )) \
        --checkpoint-interval "${INTERVAL_MS}ms" "${checkpointing[@]}" --state "$b" --state-dir "$work/state" \
        > "$work/log" 2>&1
      # The final checkpoint, after the sources ended, waits for all the
      # data before it to drain, whatever the mode: it is left out.
      grep ' checkpoint [0-9]* completed in' "$work/log" | grep -v 'final checkpoint' > "$work/completed" || true
      durations=$(sed -n 's/.*checkpoint [0-9]* completed in \([0-9]*\) ms.*/\1/p' "$work/completed")
      alignments=$(sed -n 's/.*alignment \([0-9]*\) ms.*/\1/p' "$work/completed")
      # Checkpoints without channel state count as 0 bytes.
      channel=$(sed 's/.*channel state \([0-9]*\) bytes.*/\1/; t; s/.*/0/' "$work/completed")
      n=$(echo "$durations" | grep -c . || true)
      wall=$(sed -n 's/^job .* FINISHED in \([0-9.]*\) s$/\1/p' "$work/log")
      rss=$(awk '/peak_rss_kb/ {printf "%.1f", $2 / 1024}' "$work/log")
      lps=$(awk -v l="$LINES" -v w="$wall" 'BEGIN {printf "%.0f", l / w}')
      line=$(printf "%-16s %-8s %4s %11s %9s %9s %9s %11s %11s %12s %10s %8s" "$m" "$b" "$i" "$n" \
        "$(echo "$durations" | percentile 50)" "$(echo "$durations" | percentile 99)" \
        "$(echo "$durations" | percentile 100)" "$(echo "$alignments" | percentile 50)" \
        "$(echo "$alignments" | percentile 100)" "$(( $(echo "$channel" | percentile 50) / 1024 ))" "$lps" "$rss")
      echo "$line"
      echo "$line" | awk '{print $5, $0}' >> "$work/runs-$m-$b"
    done
  done
done
echo "medians by p50 duration:"
for m in $MODES; do for b in $BACKENDS; do median "$REPEAT" < "$work/runs-$m-$b" | cut -d' ' -f2-; done; done
