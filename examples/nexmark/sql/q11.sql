-- Nexmark q11, user sessions: per bidder, the bids of each session (bids
-- no more than 10 s apart), emitted when the session has ended.
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite),
-- which groups by the legacy SESSION(dateTime, INTERVAL '10' SECOND) with
-- SESSION_START and SESSION_END; here the window table function SESSION in
-- FROM, as current Flink SQL writes it, without the TABLE keywords
-- (PostgreSQL's grammar): TABLE(SESSION(TABLE bid, ...)) -> SESSION(bid,
-- ...). The session's window_start is its first bid's time, window_end its
-- last bid's time plus the gap. Over the tables of tables.sql; connector
-- options are written name = 'value'. `weir nexmark --api sql` writes the
-- results table to --output.
CREATE TABLE nexmark_q11 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH (connector = 'blackhole');

INSERT INTO nexmark_q11
SELECT bidder, COUNT(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM SESSION(bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND)
GROUP BY bidder, window_start, window_end;
