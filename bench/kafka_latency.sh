#!/usr/bin/env bash
# End-to-end latency of the orders job (Kafka -> 1 s tumbling windows per
# customer -> Kafka exactly-once, checkpoints every second, p=1): orders at
# RATE per second for SECONDS, stamped when produced; each window total's
# latency is the time a read_committed consumer read it minus the window's
# end. Also the job's CPU time and peak RSS. Kafka is weir-mock-kafka.
#   bench/kafka_latency.sh [RATE] [SECONDS]   (defaults 20000, 30)
set -euo pipefail
WEIR=${WEIR:-build/weir}
MOCK=${MOCK:-build/weir-mock-kafka}
LAT=${LAT:-build/bench/weir_kafka_latency}
RATE=${1:-20000}
SECONDS_=${2:-30}
DIR=$(mktemp -d /tmp/weir-kafka-latency.XXXXXX)
JOB=
trap 'kill $BROKER $JOB 2>/dev/null || true; rm -rf "$DIR"' EXIT

# Four partitions: the job reads as they are written, so the mock dropping
# what is older than its last ~5 MB a partition does not matter here.
PARTS=${PARTS:-4}
"$MOCK" --topic orders:$PARTS --topic order-totals:1 --topic order-totals.weir-markers:1 \
  --topic orders-rejects:1 --topic orders-rejects.weir-markers:1 > "$DIR/broker" 2>/dev/null &
BROKER=$!
for _ in $(seq 300); do
  grep -q bootstrap "$DIR/broker" 2>/dev/null && break
  kill -0 "$BROKER" 2>/dev/null || { echo "weir-mock-kafka exited before listening" >&2; exit 1; }
  sleep 0.1
done
B=$(awk '{print $2}' "$DIR/broker")
"$WEIR" example orders --kafka-brokers "$B" --window-ms 1000 --max-out-of-orderness-ms 0 -p 1 \
  --checkpoint-interval 1s --checkpoint-dir "$DIR/chk" > "$DIR/job" 2>&1 &
JOB=$!
"$LAT" "$B" "$RATE" "$SECONDS_"
# The job's CPU time and peak RSS, read before it is stopped.
ticks=$(awk '{print $14 + $15}' "/proc/$JOB/stat")
rss=$(awk '/VmHWM/ {print $2}' "/proc/$JOB/status")
kill -TERM "$JOB"; wait "$JOB" 2>/dev/null || true; JOB=
awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v r="$rss" -v n=$(( RATE * SECONDS_ )) \
  'BEGIN { c = t / hz; printf "job: %.1f CPU-s for %d orders (%.0f orders/CPU-s at this rate), peak RSS %.0f MB\n", c, n, n / c, r / 1024 }'
