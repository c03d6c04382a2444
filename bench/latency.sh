#!/usr/bin/env bash
# End-to-end latency at 25 / 50 / 75 % of each job's maximum sustainable rate
# (bench/latency_bench.cc says how records are timed).
#
#   bash bench/latency.sh                 # every configuration below
#   SECONDS_PER_RUN=10 WARMUP=3 REPEAT=3 bash bench/latency.sh
#   ROCKSDB_CACHE_BYTES=8388608 bash bench/latency.sh   # RocksDB entry cache per state
#
# For each configuration: the maximum rate is the median records/s (wall
# clock) of REPEAT unpaced runs of MAX_RECORDS records; then one paced run
# per load of SECONDS_PER_RUN seconds, the first WARMUP seconds left out.
# Prints one markdown table row per configuration and load.
set -euo pipefail
BIN=${BIN:-build/bench/weir_latency}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
WARMUP=${WARMUP:-3}
REPEAT=${REPEAT:-3}
MAX_RECORDS=${MAX_RECORDS:-20000000}
LOADS=${LOADS:-"25 50 75"}
# job mode state parallelism
CONFIGS=${CONFIGS:-"stateless none heap 1
stateless exactly-once heap 1
keyed none heap 1
keyed exactly-once heap 1
keyed at-least-once heap 2
keyed exactly-once heap 2
keyed none rocksdb 1
keyed exactly-once rocksdb 1"}

field() { tr ' ' '\n' | awk -F= -v k="$1" '$1 == k {print $2}'; }

echo "| job | checkpoints | state | p | max rec/s | load | rec/s | p50 ms | p99 ms | p99.9 ms | max ms | mean checkpoint ms | mean alignment ms | mean sync ms | peak RSS MB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
while read -r job mode state p; do
  [ -z "$job" ] && continue
  common=(--job "$job" --mode "$mode" --state "$state" --parallelism "$p")
  [ -n "${ROCKSDB_CACHE_BYTES:-}" ] && common+=(--rocksdb-cache-bytes "$ROCKSDB_CACHE_BYTES")
  max=$(for i in $(seq "$REPEAT"); do
          "$BIN" "${common[@]}" --records "$MAX_RECORDS" 2>/dev/null | field rec_per_s
        done | sort -n | awk -v r="$REPEAT" 'NR == int((r + 1) / 2)')
  for load in $LOADS; do
    rate=$((max * load / 100))
    line=$("$BIN" "${common[@]}" --rate "$rate" --seconds "$SECONDS_PER_RUN" --warmup-seconds "$WARMUP" 2>/dev/null)
    f() { echo "$line" | field "$1"; }
    echo "| $job | $mode | $state | $p | $max | ${load} % | $(f rec_per_s) | $(f p50_ms) | $(f p99_ms) | $(f p999_ms) | $(f max_ms) | $(f mean_checkpoint_ms) | $(f mean_max_alignment_ms) | $(f mean_max_sync_ms) | $(f peak_rss_mb) |"
  done
done <<< "$CONFIGS"
