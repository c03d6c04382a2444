-- Nexmark q2, selection: the bids on every 123rd auction.
--
-- The published Nexmark SQL (Apache Flink's nexmark suite) as it is, over
-- the views of tables.sql. `weir nexmark --api sql` writes the results
-- table to --output.
CREATE TABLE nexmark_q2 (
  auction BIGINT,
  price BIGINT
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q2
SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;
