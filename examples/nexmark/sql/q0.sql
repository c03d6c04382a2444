-- Nexmark q0, pass-through: every bid, as it came.
--
-- The published Nexmark SQL (Apache Flink's nexmark suite) as it is, over
-- the tables of tables.sql; connector options are written name = 'value'.
-- `weir nexmark --api sql` writes the results table to --output.
CREATE TABLE nexmark_q0 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  date_time TIMESTAMP(3),
  extra VARCHAR
) WITH (connector = 'blackhole');

INSERT INTO nexmark_q0
SELECT auction, bidder, price, date_time, extra FROM bid;
