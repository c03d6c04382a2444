#!/usr/bin/env bash
# The running-sum job over Kafka against the same job over files, at p=1 with
# exactly-once checkpoints every second: records per CPU-second of the weir
# process and its peak RSS, the median of REPEAT runs each, interleaved.
# Kafka is weir-mock-kafka (librdkafka's mock cluster, in memory, in its own
# process; its CPU is not counted).
#   bench/kafka.sh [LINES] (default 2000000); REPEAT (default 3)
set -euo pipefail
WEIR=${WEIR:-build/weir}
MOCK=${MOCK:-build/weir-mock-kafka}
LINES=${1:-2000000}
REPEAT=${REPEAT:-3}
DIR=$(mktemp -d /tmp/weir-kafka-bench.XXXXXX)
trap 'kill $BROKER 2>/dev/null || true; rm -rf "$DIR"' EXIT

"$MOCK" --topic in:1 --topic out:1 --topic out.weir-markers:1 > "$DIR/broker" 2>/dev/null &
BROKER=$!
for _ in $(seq 300); do  # the broker prints its address once it listens: 30 s at most
  grep -q bootstrap "$DIR/broker" 2>/dev/null && break
  kill -0 "$BROKER" 2>/dev/null || { echo "weir-mock-kafka exited before listening" >&2; exit 1; }
  sleep 0.1
done
grep -q bootstrap "$DIR/broker" || { echo "weir-mock-kafka did not listen within 30 s" >&2; exit 1; }
B=$(awk '{print $2}' "$DIR/broker")
"$WEIR" generate running-sum-input --lines "$LINES" --keys 10000 --output "$DIR/in.txt" >/dev/null
awk '{print NR "\t" $0}' "$DIR/in.txt" | kcat -P -b "$B" -t in -K '\t'

run() {  # NAME ARGS...: prints "NAME records/cpu-s peak-rss-MB"
  local name=$1; shift
  rm -rf "$DIR/out" "$DIR/chk"
  /usr/bin/time -f "%U %S %M" -o "$DIR/time" "$WEIR" example running-sum -p 1 --checkpoint-interval 1s \
    --checkpoint-dir "$DIR/chk" --output "$DIR/out" "$@" >/dev/null 2>&1
  read -r user sys rss < "$DIR/time"
  awk -v n="$name" -v l="$LINES" -v u="$user" -v s="$sys" -v r="$rss" \
    'BEGIN { printf "%s %.0f %.0f\n", n, l / (u + s), r / 1024 }'
}

for i in $(seq "$REPEAT"); do
  run files --input "$DIR/in.txt"
  # A fresh output topic each run would need a new broker; the job's output
  # grows the topic by LINES each run, which does not change its cost.
  run kafka-exactly-once --kafka-brokers "$B" --input-topic in --kafka-bounded --output-topic out
  run kafka-at-least-once --kafka-brokers "$B" --input-topic in --kafka-bounded --output-topic out \
    --kafka-delivery at-least-once
done > "$DIR/results"
for name in files kafka-exactly-once kafka-at-least-once; do
  grep "^$name " "$DIR/results" | sort -k2 -n | awk -v r="$REPEAT" \
    'NR == int((r + 1) / 2) { printf "%-22s %10s records/CPU-s  peak RSS %s MB\n", $1, $2, $3 }'
done
