-- Nexmark q19, auction top-10 price: per auction, the 10 highest bids with
-- their rank.
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite):
-- the order breaks a tie of prices by time (ORDER BY price DESC,
-- `dateTime`: the earlier bid ranks higher), where the published text
-- leaves ties to arrival order, which differs between runs at p > 1. Over
-- the views of tables.sql. An updating result: a bid entering the top 10
-- moves the ones below it down a rank. `weir nexmark --api sql` writes the
-- results table (with each row's kind) to --output.
CREATE TABLE nexmark_q19 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel VARCHAR,
  url VARCHAR,
  `dateTime` TIMESTAMP(3),
  extra VARCHAR,
  rank_number BIGINT
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q19
SELECT *
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, `dateTime`) AS rank_number
  FROM bid
)
WHERE rank_number <= 10;
