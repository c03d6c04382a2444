-- Nexmark q1, currency conversion: every bid with its price in euros.
--
-- The published Nexmark SQL (Apache Flink's nexmark suite) as it is, over
-- the views of tables.sql, with the sink's price an exact DECIMAL(23, 3).
-- `weir nexmark --api sql` writes the results table to --output.
CREATE TABLE nexmark_q1 (
  auction BIGINT,
  bidder BIGINT,
  price DECIMAL(23, 3),
  `dateTime` TIMESTAMP(3),
  extra VARCHAR
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q1
SELECT
  auction,
  bidder,
  0.908 * price AS price, -- dollars to euros
  `dateTime`,
  extra
FROM bid;
