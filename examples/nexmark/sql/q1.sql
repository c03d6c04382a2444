-- Nexmark q1, currency conversion: every bid with its price in euros, an
-- exact DECIMAL (0.908 * price is a DECIMAL(23, 3)).
--
-- The published Nexmark SQL (Apache Flink's nexmark suite), over the
-- tables of tables.sql; connector options are written name = 'value'.
-- `weir nexmark --api sql` writes the results table to --output.
CREATE TABLE nexmark_q1 (
  auction BIGINT,
  bidder BIGINT,
  price DECIMAL(23, 3),
  date_time TIMESTAMP(3),
  extra VARCHAR
) WITH (connector = 'blackhole');

INSERT INTO nexmark_q1
SELECT auction, bidder, 0.908 * price AS price, date_time, extra
FROM bid;
