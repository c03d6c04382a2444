#!/usr/bin/env bash
# SQL operators over the Nexmark generator (weir sql), side by side in one
# run: a GROUP BY of few groups in one phase and in two (local partials
# before the exchange), the same over an updating GROUP BY per bidder
# (partials of additions less retractions), an inner join of auctions and bids (the auction side unique on its
# primary key: append-only), the same as a LEFT JOIN (the changelog join:
# both sides' rows kept per key with counts, padded rows taken back), an
# inner join of auctions with an updating GROUP BY count of their bids, and
# a window TOP-N (the 3 highest bids of each 10 s window) beside the window
# MAX it refines. Each REPEAT times (default 3), alternating, on EVENTS
# events (default 2 M) at p=1 with exactly-once checkpoints every 1 s into a
# blackhole. Prints the medians of events/s per core (events over the
# process's user + system CPU seconds) and peak RSS.
#   bench/sql_operators.sh; REPEAT, EVENTS, P (parallelism, default 1), WEIR,
#   ONLY (some of the names, e.g. ONLY="regroup regroup-2phase")
set -euo pipefail
WEIR=${WEIR:-build/weir}
REPEAT=${REPEAT:-3}
EVENTS=${EVENTS:-2000000}
P=${P:-1}
OUT=$(mktemp -d /tmp/weir-sql-operators.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

tables="CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, date_time TIMESTAMP(3))
  WITH (connector = 'nexmark', events = $EVENTS, watermark = 'date_time - INTERVAL ''4'' SECOND');
CREATE TABLE auction (id BIGINT PRIMARY KEY, seller BIGINT, category BIGINT)
  WITH (connector = 'nexmark', events = $EVENTS);"
group_by="CREATE TABLE o (c BIGINT, n BIGINT, total BIGINT, top BIGINT) WITH (connector = 'blackhole');
INSERT INTO o SELECT MOD(auction, 10), COUNT(*), SUM(price), MAX(price) FROM bid GROUP BY MOD(auction, 10);"
regroup="CREATE TABLE o (m BIGINT, g BIGINT, total BIGINT) WITH (connector = 'blackhole');
INSERT INTO o SELECT MOD(n, 10), COUNT(*), SUM(total) FROM
  (SELECT bidder, COUNT(*) AS n, SUM(price) AS total FROM bid GROUP BY bidder) AS c GROUP BY MOD(n, 10);"
declare -A QUERIES=(
  [group-by]="$group_by"
  [group-by-2phase]="SET \"table.optimizer.agg-phase-strategy\" = 'TWO_PHASE';
$group_by"
  [regroup]="$regroup"
  [regroup-2phase]="SET \"table.optimizer.agg-phase-strategy\" = 'TWO_PHASE';
$regroup"
  [inner-join]="CREATE TABLE o (id BIGINT, seller BIGINT, price BIGINT) WITH (connector = 'blackhole');
INSERT INTO o SELECT a.id, a.seller, b.price FROM auction AS a JOIN bid AS b ON a.id = b.auction;"
  [left-join]="CREATE TABLE o (id BIGINT, seller BIGINT, price BIGINT) WITH (connector = 'blackhole');
INSERT INTO o SELECT a.id, a.seller, b.price FROM auction AS a LEFT JOIN bid AS b ON a.id = b.auction;"
  [updating-join]="CREATE TABLE o (id BIGINT, seller BIGINT, n BIGINT) WITH (connector = 'blackhole');
INSERT INTO o SELECT a.id, a.seller, c.n FROM auction AS a
  JOIN (SELECT auction, COUNT(*) AS n FROM bid GROUP BY auction) AS c ON a.id = c.auction;"
  [window-max]="CREATE TABLE o (ws TIMESTAMP(3), price BIGINT) WITH (connector = 'blackhole');
INSERT INTO o SELECT window_start, MAX(price) FROM TUMBLE(bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND)
  GROUP BY window_start, window_end;"
  [window-top3]="CREATE TABLE o (ws TIMESTAMP(3), price BIGINT, rn BIGINT) WITH (connector = 'blackhole');
INSERT INTO o SELECT window_start, price, rn FROM (SELECT window_start, window_end, price,
  ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rn
  FROM TUMBLE(bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND)) AS t WHERE rn <= 3;"
)
ORDER=${ONLY:-"group-by group-by-2phase regroup regroup-2phase inner-join left-join updating-join window-max window-top3"}

run() {  # NAME: prints "events/s-per-core peak-rss-MB"
  printf '%s\n%s\n' "$tables" "${QUERIES[$1]}" >"$OUT/$1.sql"
  /usr/bin/time -f "%U %S %M" -o "$OUT/time.txt" "$WEIR" sql "$OUT/$1.sql" -p "$P" --checkpoint-interval 1s \
    >"$OUT/run.txt" 2>&1 || { cat "$OUT/run.txt" >&2; exit 1; }
  awk -v events="$EVENTS" '{ printf "%.0f %.0f\n", events / ($1 + $2), $3 / 1024 }' "$OUT/time.txt"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "weir sql over Nexmark, $EVENTS events, p=$P, exactly-once checkpoints every 1 s; medians of $REPEAT runs, alternating"
for q in $ORDER; do : >"$OUT/$q.runs"; done
for _ in $(seq "$REPEAT"); do
  for q in $ORDER; do run "$q" >>"$OUT/$q.runs"; done
done
printf "%-14s %16s %12s\n" query "events/s/core" "peak RSS MB"
for q in $ORDER; do
  printf "%-14s %16s %12s\n" "$q" "$(cut -d' ' -f1 "$OUT/$q.runs" | median)" "$(cut -d' ' -f2 "$OUT/$q.runs" | median)"
done
