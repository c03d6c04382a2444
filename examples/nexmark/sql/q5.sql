-- Nexmark q5, hot items: per 10-second window, every 2 seconds, the
-- auctions with the most bids.
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite):
-- window table functions without the TABLE keywords (PostgreSQL's
-- grammar): TABLE(HOP(TABLE bid, ...)) -> HOP(bid, ...). Over the tables of
-- tables.sql; connector options are written name = 'value'. MaxBids groups
-- the per-auction counts by their window's bounds (a window aggregation
-- over windowed rows), and the join on both bounds is a window join: a
-- window's rows are dropped once the watermark passes its end. `weir
-- nexmark --api sql` writes the results table to --output.
CREATE TABLE nexmark_q5 (
  auction BIGINT,
  num BIGINT
) WITH (connector = 'blackhole');

INSERT INTO nexmark_q5
SELECT AuctionBids.auction, AuctionBids.num
FROM (
  SELECT auction, COUNT(*) AS num, window_start AS starttime, window_end AS endtime
  FROM HOP(bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND)
  GROUP BY auction, window_start, window_end
) AS AuctionBids
JOIN (
  SELECT MAX(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
  FROM (
    SELECT COUNT(*) AS num, window_start AS starttime, window_end AS endtime
    FROM HOP(bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND)
    GROUP BY auction, window_start, window_end
  ) AS CountBids
  GROUP BY CountBids.starttime, CountBids.endtime
) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
   AND AuctionBids.num >= MaxBids.maxn;
