#!/usr/bin/env bash
# The running-sum job over Kafka against the same job over files, at p=1 with
# exactly-once checkpoints every second: records per CPU-second of the weir
# process and its peak RSS, the median of REPEAT runs each, interleaved.
# Kafka is weir-mock-kafka (librdkafka's mock cluster, in memory, in its own
# process; its CPU is not counted). The mock keeps about 5 MB per partition
# and drops older records, so the topics have a partition per ~2 MB of input
# and the script stops if a partition lost its start.
# Then Nexmark q5 at p=1 from the generator and from a Kafka topic filled by
# `weir nexmark --produce-to` (EVENTS events), both into the blackhole:
# events per CPU-second and peak RSS.
#   bench/kafka.sh [LINES] (default 2000000); EVENTS (default 1000000); REPEAT (default 3)
set -euo pipefail
WEIR=${WEIR:-build/weir}
MOCK=${MOCK:-build/weir-mock-kafka}
LINES=${1:-2000000}
REPEAT=${REPEAT:-3}
EVENTS=${EVENTS:-1000000}
NXPARTS=$(( EVENTS / 10000 + 1 ))  # events are up to ~300 bytes: < 3 MB a partition
DIR=$(mktemp -d /tmp/weir-kafka-bench.XXXXXX)
trap 'kill $BROKER 2>/dev/null || true; rm -rf "$DIR"' EXIT

PARTS=$(( LINES / 100000 + 1 ))  # ~15 bytes a line: ~1.5 MB per partition
"$MOCK" --topic in:$PARTS --topic out:$PARTS --topic out.weir-markers:1 --topic nexmark:$NXPARTS \
  > "$DIR/broker" 2>/dev/null &
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
"$WEIR" nexmark --produce-to nexmark --kafka-brokers "$B" --events "$EVENTS" -p 2 >/dev/null
check_kept() {  # TOPIC PARTITIONS: every record is still there
  for p in $(seq 0 $(($2 - 1))); do
    first=$(kcat -C -b "$B" -t "$1" -p "$p" -o beginning -c 1 -e -q -f '%o\n')
    [ "${first:-0}" = 0 ] || { echo "partition $p of '$1' starts at $first: the mock dropped records" >&2; exit 1; }
  done
}
check_kept in "$PARTS"
check_kept nexmark "$NXPARTS"

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
  for src in generator kafka; do
    args=(--events "$EVENTS")
    [ $src = kafka ] && args=(--source kafka --topic nexmark --kafka-brokers "$B")
    "$WEIR" nexmark --query q5 -p 1 --checkpoint-interval 1s "${args[@]}" > "$DIR/nx"
    awk -v n="q5-from-$src" '/^events\/s per core:/ { e = $4 } /^peak rss:/ { r = $3 } END { printf "%s %.0f %.0f\n", n, e, r }' "$DIR/nx"
  done
done > "$DIR/results"
for name in files kafka-exactly-once kafka-at-least-once q5-from-generator q5-from-kafka; do
  grep "^$name " "$DIR/results" | sort -k2 -n | awk -v r="$REPEAT" \
    'NR == int((r + 1) / 2) { printf "%-22s %10s records/CPU-s  peak RSS %s MB\n", $1, $2, $3 }'
done
