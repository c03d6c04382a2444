#!/usr/bin/env bash
# The running-sum job into PostgreSQL at p=1 with exactly-once checkpoints
# every second: the two-phase-commit sink (every sum a row) and the upsert
# sink (the latest sum per key), rows per wall second and per CPU-second of
# the weir process, and its peak RSS; the median of REPEAT runs each,
# interleaved. PostgreSQL 15 is a throwaway server in a temporary directory
# (fsync off; its CPU is not counted).
#   bench/postgres.sh [LINES] (default 1000000); KEYS (default 10000); REPEAT (default 3)
set -euo pipefail
WEIR=${WEIR:-build/weir}
PG=/usr/lib/postgresql/15/bin
LINES=${1:-1000000}
KEYS=${KEYS:-10000}
REPEAT=${REPEAT:-3}
DIR=$(mktemp -d /tmp/weir-pg-bench.XXXXXX)
AS=()
if [ "$(id -u)" = 0 ]; then chown postgres "$DIR"; AS=(runuser -u postgres --); fi
PORT=$(( 20000 + $$ % 20000 ))
stop() { "${AS[@]}" "$PG/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap stop EXIT
"${AS[@]}" "$PG/initdb" -D "$DIR/data" -A trust -U weir --no-sync >/dev/null
"${AS[@]}" "$PG/pg_ctl" -D "$DIR/data" -w -l "$DIR/log" \
  -o "-p $PORT -k $DIR -c listen_addresses='' -c max_prepared_transactions=8 -c fsync=off" start >/dev/null
CONN="host=$DIR port=$PORT user=weir dbname=postgres"
psql -q "$CONN" -c 'CREATE TABLE sums (key text, sum bigint, count bigint)'
psql -q "$CONN" -c 'CREATE TABLE totals (key text PRIMARY KEY, sum bigint, count bigint)'
"$WEIR" generate running-sum-input --lines "$LINES" --keys "$KEYS" --output "$DIR/in.txt" >/dev/null

run() {  # NAME TABLE ARGS...: prints "NAME rows/s rows/cpu-s peak-rss-MB"
  local name=$1 table=$2; shift 2
  rm -rf "$DIR/out" "$DIR/chk"
  psql -q "$CONN" -c "TRUNCATE $table"
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -f "%U %S %M" -o "$DIR/time" "$WEIR" example running-sum -p 1 --checkpoint-interval 1s \
    --checkpoint-dir "$DIR/chk" --output "$DIR/out" --input "$DIR/in.txt" --postgres "$CONN" \
    --output-table "$table" "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  read -r user sys rss < "$DIR/time"
  local rows
  rows=$(psql -qtA "$CONN" -c "SELECT count(*) FROM $table")
  awk -v n="$name" -v l="$LINES" -v u="$user" -v s="$sys" -v r="$rss" -v a="$start" -v b="$end" -v rows="$rows" \
    'BEGIN { printf "%s %.0f %.0f %.0f %s\n", n, l / (b - a), l / (u + s), r / 1024, rows }'
}

for i in $(seq "$REPEAT"); do
  run two-phase sums
  run upsert totals --postgres-upsert
done > "$DIR/results"
echo "$LINES input records over $KEYS keys; rows in the table: two-phase one per record, upsert one per key"
for name in two-phase upsert; do
  grep "^$name " "$DIR/results" | sort -k2 -n | awk -v r="$REPEAT" \
    'NR == int((r + 1) / 2) { printf "%-10s %9s records/s  %9s records/CPU-s  peak RSS %s MB  table rows %s\n", $1, $2, $3, $4, $5 }'
done
