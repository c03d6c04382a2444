-- Nexmark q12, processing-time windows: per bidder, the bids of each
-- 10-second window of the wall clock.
--
-- The published Nexmark SQL (Apache Flink's nexmark suite) as it is, over
-- the views of tables.sql: a view adds the processing time, PROCTIME().
-- The windows close as the wall clock passes their end; at the end of a
-- bounded input the open ones fire. Results depend on speed: only each
-- bidder's total is reproducible. `weir nexmark --api sql` writes the
-- results table to --output.
CREATE TABLE nexmark_q12 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH (
  'connector' = 'blackhole'
);

CREATE VIEW B AS SELECT *, PROCTIME() AS p_time FROM bid;

INSERT INTO nexmark_q12
SELECT
  bidder,
  count(*) AS bid_count,
  window_start AS starttime,
  window_end AS endtime
FROM TABLE(
  TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
