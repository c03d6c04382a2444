#!/usr/bin/env bash
# Runs each throughput scenario REPEAT times (default 5), one process per
# run, and prints the median run of each by records per CPU-second.
set -euo pipefail
BENCH=${BENCH:-build/bench/weir_bench}
REPEAT=${REPEAT:-5}
RECORDS=${RECORDS:-50000000}
for scenario in chained keyed keyed-checkpointed; do
  for i in $(seq "$REPEAT"); do
    "$BENCH" --scenario "$scenario" --records "$RECORDS"
  done | sort -t= -k7 -n | awk -v r="$REPEAT" 'NR == int((r + 1) / 2)'
done
