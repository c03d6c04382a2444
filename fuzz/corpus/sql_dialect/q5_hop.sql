-- Nexmark q5, hot items: per 10-second window, every 2 seconds, the
-- auctions with the most bids.
--
-- The published Nexmark SQL (Apache Flink's nexmark suite) as it is, over
-- the views of tables.sql. MaxBids groups the per-auction counts by their
-- window's bounds (a window aggregation over windowed rows), and the join
-- on both bounds is a window join: a window's rows are dropped once the
-- watermark passes its end. `weir nexmark --api sql` writes the results
-- table to --output.
CREATE TABLE nexmark_q5 (
  auction BIGINT,
  num BIGINT
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q5
SELECT AuctionBids.auction, AuctionBids.num
FROM (
  SELECT
    auction,
    count(*) AS num,
    window_start AS starttime,
    window_end AS endtime
  FROM TABLE(
    HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
  GROUP BY auction, window_start, window_end
) AS AuctionBids
JOIN (
  SELECT
    max(CountBids.num) AS maxn,
    CountBids.starttime,
    CountBids.endtime
  FROM (
    SELECT
      count(*) AS num,
      window_start AS starttime,
      window_end AS endtime
    FROM TABLE(
      HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
    GROUP BY auction, window_start, window_end
  ) AS CountBids
  GROUP BY CountBids.starttime, CountBids.endtime
) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime AND
   AuctionBids.endtime = MaxBids.endtime AND
   AuctionBids.num >= MaxBids.maxn;
