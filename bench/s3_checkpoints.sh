#!/usr/bin/env bash
# Checkpoints to a local directory against checkpoints to S3 (s3rver, the
# S3-compatible server the tests use, on loopback, keeping its objects on the
# same disk): the running-sum job, LINES lines over KEYS keys (its state: one
# sum per key) at p=2 with checkpoints every second, read at RATE lines/s per
# source subtask. Per storage: the median checkpoint duration and size, and
# the job's peak RSS; then the time to restore the last checkpoint (a run
# with --restore latest whose input is all read: the slowest subtask's
# restore, from its log line), that run's peak RSS and the state-file bytes
# its subtasks read. Three storages: a local directory, S3, and S3 with
# incremental RocksDB checkpoints (s3-inc). REPEAT runs each, interleaved;
# medians.
# Then restores after a task failure in the same process (--fail-every),
# checkpoints in S3, heap state: with local recovery (the process's copies
# of its state files) and without (--no-local-recovery: read from S3). Per
# run, the median restore time of the keyed subtasks and the share of their
# state-file bytes read from local copies.
#   bench/s3_checkpoints.sh [LINES] (default 2000000); KEYS (default 500000);
#   RATE (default 150000); REPEAT (default 3)
set -euo pipefail
WEIR=${WEIR:-build/weir}
LINES=${1:-2000000}
KEYS=${KEYS:-500000}
RATE=${RATE:-150000}
REPEAT=${REPEAT:-3}
S3RVER=$(dirname "$0")/../tests/s3rver/serve.js
[ -f "$(dirname "$0")/../tests/s3rver/node_modules/.bin/s3rver" ] || { echo "s3rver is missing: bash scripts/install-deps.sh installs it" >&2; exit 1; }
DIR=$(mktemp -d /tmp/weir-s3-bench.XXXXXX)
PORT=$(( 20000 + $$ % 20000 ))
mkdir -p "$DIR/s3"
node "$S3RVER" -d "$DIR/s3" -p "$PORT" -a 127.0.0.1 --configure-bucket weir --silent >"$DIR/s3.log" 2>&1 &
S3PID=$!
stop() { kill "$S3PID" 2>/dev/null || true; wait "$S3PID" 2>/dev/null || true; rm -rf "$DIR"; }
trap stop EXIT
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break
  sleep 0.1  # waiting for s3rver to listen
done
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$PORT
"$WEIR" generate running-sum-input --lines "$LINES" --keys "$KEYS" --output "$DIR/in.txt" >/dev/null

run() {  # NAME CHECKPOINT-DIR [STATE FLAGS]: prints "NAME ckpt-ms ckpt-MB rss-MB restore-ms restore-rss-MB read-MB"
  local name=$1 chk=$2
  shift 2
  rm -rf "$DIR/out" "$DIR/chk"
  /usr/bin/time -f "%M" -o "$DIR/time" "$WEIR" example running-sum -p 2 --checkpoint-interval 1s \
    --checkpoint-dir "$chk" --output "$DIR/out" --input "$DIR/in.txt" --rate "$RATE" "$@" -v >"$DIR/run.out" 2>"$DIR/run.err"
  local rss
  rss=$(cat "$DIR/time")
  # "checkpoint N completed in X ms, B bytes ..." (the final one too)
  local stats
  stats=$(grep -o 'completed in [0-9]* ms, [0-9]* bytes' "$DIR/run.err" | awk '{ print $3, $5 }' | sort -n |
    awk '{ ms[NR] = $1; b[NR] = $2 } END { m = int((NR + 1) / 2); printf "%d %.1f", ms[m], b[m] / 1048576 }')
  /usr/bin/time -f "%M" -o "$DIR/time" "$WEIR" example running-sum -p 2 --checkpoint-dir "$chk" \
    --output "$DIR/out" --input "$DIR/in.txt" --restore latest --mode none "$@" -v >"$DIR/restore.out" 2>"$DIR/restore.err"
  local restore read
  restore=$(grep -o 'restored checkpoint [0-9]* in [0-9]* ms' "$DIR/restore.err" | awk '{ print $5 }' | sort -n | tail -1)
  # "(B bytes of state files read)" of every subtask, summed (native files
  # of incremental checkpoints are downloaded besides).
  read=$(grep -o '([0-9]* bytes of state files read' "$DIR/restore.err" | tr -d '(' |
    awk '{ s += $1 } END { printf "%.1f", s / 1048576 }')
  echo "$name $stats $(( rss / 1024 )) $restore $(( $(cat "$DIR/time") / 1024 )) $read"
}

for i in $(seq "$REPEAT"); do
  run local "$DIR/chk"
  run s3 "s3://weir/chk-$i"
  run s3-inc "s3://weir/inc-$i" --state rocksdb --incremental
done > "$DIR/results"
echo "$LINES lines over $KEYS keys, p=2, checkpoints every 1 s; medians of $REPEAT runs"
printf "%-6s %14s %12s %13s %14s %17s %16s\n" storage "checkpoint ms" "checkpoint MB" "job peak RSS" "restore ms" "restore peak RSS" "restore read MB"
for name in local s3 s3-inc; do
  grep "^$name " "$DIR/results" | awk -v n="$name" -v r="$REPEAT" '
    { c[NR] = $2; mb[NR] = $3; rss[NR] = $4; rs[NR] = $5; rrss[NR] = $6; rd[NR] = $7 }
    function med(a,   i, j, t, k) { k = 0; for (i in a) s[++k] = a[i]; for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (s[j] + 0 < s[i] + 0) { t = s[i]; s[i] = s[j]; s[j] = t }; return s[int((k + 1) / 2)] }
    END { printf "%-6s %14s %12s %10s MB %14s %14s MB %16s\n", n, med(c), med(mb), med(rss), med(rs), med(rrss), med(rd) }'
done

failover() {  # NAME [FLAGS]: prints "NAME restore-ms local-share-% peak-RSS-MB"
  local name=$1
  shift
  rm -rf "$DIR/out"
  /usr/bin/time -f "%M" -o "$DIR/time" "$WEIR" example running-sum -p 2 --checkpoint-interval 1s \
    --checkpoint-dir "s3://weir/fo-$name-$i" --output "$DIR/out" --input "$DIR/in.txt" --rate "$RATE" \
    --fail-every $(( LINES / 4 )) --seed 7 "$@" -v >"$DIR/fo.out" 2>"$DIR/fo.err"
  # "running-sum -> output-sink (...) restored checkpoint N in X ms (B bytes of state files read, L from local copies)"
  grep 'running-sum -> output-sink.*restored checkpoint' "$DIR/fo.err" |
    sed -E 's/.* in ([0-9]+) ms \(([0-9]+) bytes of state files read, ([0-9]+) from local copies\)/\1 \2 \3/' |
    sort -n | awk -v n="$name" -v rss="$(( $(cat "$DIR/time") / 1024 ))" '{ ms[NR] = $1; b += $2; l += $3 }
      END { if (NR == 0) { print n, "-", "-", rss; exit } printf "%s %d %.0f %d\n", n, ms[int((NR + 1) / 2)], b ? 100 * l / b : 0, rss }'
}

for i in $(seq "$REPEAT"); do
  failover local-recovery
  failover from-s3 --no-local-recovery
done > "$DIR/failover"
echo
echo "restores after a task failure in the same process (S3, heap state, --fail-every $(( LINES / 4 ))); medians of $REPEAT runs"
printf "%-15s %12s %24s %14s\n" restore "restore ms" "bytes from local copies" "job peak RSS"
for name in local-recovery from-s3; do
  grep "^$name " "$DIR/failover" | awk -v n="$name" '{ ms[NR] = $2; pc[NR] = $3; rss[NR] = $4 }
    function med(a,   i, j, t, k) { k = 0; for (i in a) s[++k] = a[i]; for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (s[j] + 0 < s[i] + 0) { t = s[i]; s[i] = s[j]; s[j] = t }; return s[int((k + 1) / 2)] }
    END { printf "%-15s %12s %23s%% %11s MB\n", n, med(ms), med(pc), med(rss) }'
done
