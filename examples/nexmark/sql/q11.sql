-- Nexmark q11, user sessions: per bidder, the bids of each session (bids
-- no more than 10 s apart), emitted when the session has ended.
--
-- As the published Nexmark SQL (Apache Flink's nexmark suite) writes it:
-- the legacy group window SESSION(dateTime, INTERVAL '10' SECOND) with
-- SESSION_START and SESSION_END, which weir plans as the window table
-- function SESSION. The session's start is its first bid's time, its end
-- its last bid's time plus the gap. Over the views of tables.sql. `weir
-- nexmark --api sql` writes the results table to --output.
CREATE TABLE nexmark_q11 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q11
SELECT
    B.bidder,
    count(*) as bid_count,
    SESSION_START(B.`dateTime`, INTERVAL '10' SECOND) as starttime,
    SESSION_END(B.`dateTime`, INTERVAL '10' SECOND) as endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND);
