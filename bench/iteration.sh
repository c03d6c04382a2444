#!/usr/bin/env bash
# An iteration's cost: the connected-components job (examples/components)
# over EDGES random edges among VERTICES vertex ids, at parallelism P, with
# no checkpoints, aligned and unaligned exactly-once checkpoints every
# INTERVAL_MS. Per run: the job's wall time, input edges per second, the
# rounds of markers its end took, records through the loop (the head's
# records in), completed checkpoints with their mean and max duration, the
# largest channel state a checkpoint held (the back edge's records), the
# peak RSS; every run's committed output checked with `weir verify
# connected-components`. Medians of REPEAT runs by wall time.
#
#   bash bench/iteration.sh
#   EDGES=2000000 VERTICES=2000000 P=2 INTERVAL_MS=1000 REPEAT=3 bash bench/iteration.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
WEIR=${WEIR:-build/weir}
EDGES=${EDGES:-1000000}
VERTICES=${VERTICES:-1000000}
P=${P:-2}
INTERVAL_MS=${INTERVAL_MS:-1000}
REPEAT=${REPEAT:-3}
MODES=${MODES:-"none aligned unaligned"}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$WEIR" generate graph --output "$work/edges.txt" --vertices "$VERTICES" --edges "$EDGES" --seed 1 > /dev/null

printf "%-10s %4s %8s %10s %7s %12s %5s %8s %8s %12s %8s\n" mode run wall_s edges/s rounds loop_records cps mean_ms max_ms channel_b rss_mb
for mode in $MODES; do
  runs=$(mktemp)
  for i in $(seq "$REPEAT"); do
    rm -rf "$work/out"
    case $mode in
      none) flags=(--mode none) ;;
      *) flags=(--checkpointing "$mode" --checkpoint-interval "${INTERVAL_MS}ms") ;;
    esac
    out=$(/usr/bin/time -f "peak_rss_kb %M" "$WEIR" example connected-components --input "$work/edges.txt" \
      --output "$work/out" -p "$P" --verbose "${flags[@]}" 2>&1)
    verify=$("$WEIR" verify connected-components --input "$work/edges.txt" --output "$work/out" || true)
    echo "$verify" | grep -q "^exactly-once: yes" || { echo "$mode run $i: $verify" >&2; exit 1; }
    wall=$(echo "$out" | sed -n 's/^job .* FINISHED in \([0-9.]*\) s$/\1/p')
    rounds=$(echo "$out" | sed -n 's/.*ends its iteration after \([0-9]*\) rounds.*/\1/p' | sort -n | tail -1)
    loop=$(echo "$out" | sed -n 's/^vertex iteration-head (p=[0-9]*): records in \([0-9]*\),.*/\1/p')
    cps=$(echo "$out" | sed -n 's/^checkpoints completed: \([0-9]*\).*/\1/p')
    mean=$(echo "$out" | sed -n 's/^checkpoints completed: .*mean \([0-9.]*\) ms.*/\1/p')
    max=$(echo "$out" | sed -n 's/^checkpoints completed: .*max \([0-9]*\) ms.*/\1/p')
    channel=$(echo "$out" | sed -n 's/.*channel state \([0-9]*\) bytes.*/\1/p' | sort -n | tail -1)
    rss=$(echo "$out" | awk '/peak_rss_kb/ {printf "%.1f", $2 / 1024}')
    eps=$(awk -v e="$EDGES" -v w="$wall" 'BEGIN {printf "%.0f", e / w}')
    printf "%-10s %4s %8s %10s %7s %12s %5s %8s %8s %12s %8s\n" "$mode" "$i" "$wall" "$eps" "${rounds:-?}" \
      "${loop:-?}" "${cps:-0}" "${mean:-0}" "${max:-0}" "${channel:-0}" "$rss" | tee -a "$runs"
  done
  echo "median ($mode) by wall time:"
  awk '{print $3, $0}' "$runs" | median "$REPEAT" | cut -d' ' -f2-
  rm -f "$runs"
done
