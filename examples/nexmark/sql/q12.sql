-- Nexmark q12, processing-time windows: per bidder, the bids of each
-- 10-second window of the wall clock.
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite):
-- the window table function without TABLE keywords over a subquery in
-- parentheses (PostgreSQL's grammar), which adds the processing time as
-- PROCTIME(). Over the tables of tables.sql; connector options are written
-- name = 'value'. The windows close as the wall clock passes their end;
-- at the end of a bounded input the open ones fire. Results depend on
-- speed: only each bidder's total is reproducible. `weir nexmark --api
-- sql` writes the results table to --output.
CREATE TABLE nexmark_q12 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH (connector = 'blackhole');

INSERT INTO nexmark_q12
SELECT B.bidder, COUNT(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM TUMBLE((SELECT *, PROCTIME() AS p_time FROM bid), DESCRIPTOR(p_time), INTERVAL '10' SECOND) B
GROUP BY B.bidder, window_start, window_end;
