-- Nexmark q11, user sessions: per bidder, the bids of each session (bids
-- no more than 10 s apart), emitted when the session has ended.
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite),
-- which groups by the legacy SESSION(dateTime, INTERVAL '10' SECOND) with
-- SESSION_START and SESSION_END (group window functions, not supported
-- yet); here the window table function SESSION, as current Flink SQL
-- writes it. The session's window_start is its first bid's time,
-- window_end its last bid's time plus the gap. Over the views of
-- tables.sql. `weir nexmark --api sql` writes the results table to
-- --output.
CREATE TABLE nexmark_q11 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q11
SELECT B.bidder, count(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM TABLE(SESSION(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND)) B
GROUP BY B.bidder, window_start, window_end;
