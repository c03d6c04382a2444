#!/usr/bin/env bash
# Interleaved A/B of two builds: the throughput scenarios of bench/run.sh and
# a few Nexmark queries, alternating A and B run by run so both see the same
# machine. Prints every run and the median of each side.
#   bench/ab.sh BUILD_DIR_A BUILD_DIR_B
# REPEAT (default 5) runs per side, RECORDS (default 20 M) per scenario,
# QUERIES (default "q5 q20") on EVENTS (default 5 M) events, exactly-once
# checkpoints every 1 s. PIN_CPU=N runs every process on CPU N alone: the
# source and the keyed task then share one core, which takes the cost of
# moving cache lines between cores (most of a two-thread run's spread on a
# shared machine) out of the figure and leaves the code's cost per record.
set -euo pipefail
A=$1
B=$2
REPEAT=${REPEAT:-5}
RECORDS=${RECORDS:-20000000}
QUERIES=${QUERIES:-"q5 q20"}
EVENTS=${EVENTS:-5000000}
PIN=()
[ -n "${PIN_CPU:-}" ] && PIN=(taskset -c "$PIN_CPU")
results=$(mktemp)
trap 'rm -f "$results"' EXIT

for scenario in chained keyed keyed-checkpointed; do
  for i in $(seq "$REPEAT"); do
    for side in A B; do
      dir=$A; [ "$side" = B ] && dir=$B
      line=$("${PIN[@]}" "$dir/bench/weir_bench" --scenario "$scenario" --records "$RECORDS" 2>/dev/null)
      rate=$(echo "$line" | sed -n 's/.*rec_per_cpu_s=\([0-9.]*\).*/\1/p')
      rss=$(echo "$line" | sed -n 's/.*peak_rss_mb=\([0-9.]*\).*/\1/p')
      echo "$scenario $side $rate $rss" | tee -a "$results"
    done
  done
done
for q in $QUERIES; do
  for i in $(seq "$REPEAT"); do
    for side in A B; do
      dir=$A; [ "$side" = B ] && dir=$B
      out=$("${PIN[@]}" "$dir/weir" nexmark --query "$q" --events "$EVENTS" --parallelism 1 \
        --checkpoint-interval 1s --mode exactly-once 2>&1)
      rate=$(echo "$out" | awk '/events\/s per core/ {print $4}')
      rss=$(echo "$out" | awk '/^peak rss/ {print $3}')
      echo "nexmark-$q $side $rate $rss" | tee -a "$results"
    done
  done
done
echo
printf "%-20s %14s %14s %8s %10s %10s\n" case A_median B_median B/A A_rss_mb B_rss_mb
for c in $(awk '{print $1}' "$results" | uniq); do
  med() { awk -v c="$c" -v s="$1" -v f="$2" '$1 == c && $2 == s {print $f}' "$results" | sort -n |
          awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
  a=$(med A 3); b=$(med B 3); ar=$(med A 4); br=$(med B 4)
  printf "%-20s %14s %14s %8.3f %10s %10s\n" "$c" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print b / a}')" "$ar" "$br"
done
