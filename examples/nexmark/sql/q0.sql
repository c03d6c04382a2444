-- Nexmark q0, pass-through: every bid, as it is.
--
-- The published Nexmark SQL (Apache Flink's nexmark suite) as it is, over
-- the views of tables.sql. `weir nexmark --api sql` writes the results
-- table to --output.
CREATE TABLE nexmark_q0 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  `dateTime` TIMESTAMP(3),
  extra VARCHAR
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q0
SELECT auction, bidder, price, `dateTime`, extra FROM bid;
