-- Nexmark q18, find last bid: per bidder and auction, the latest bid (by
-- event time; on an equal time the later arrival).
--
-- The published Nexmark SQL (Apache Flink's nexmark suite) as it is. Over
-- the views of tables.sql. ROW_NUMBER() ordered by time descending with rn
-- = 1 is a deduplication keeping the last row: an updating result, a newer
-- bid retracting the one before. `weir nexmark --api sql` writes the
-- results table (with each row's kind) to --output.
CREATE TABLE nexmark_q18 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel VARCHAR,
  url VARCHAR,
  `dateTime` TIMESTAMP(3),
  extra VARCHAR
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q18
SELECT auction, bidder, price, channel, url, `dateTime`, extra
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY `dateTime` DESC) AS rank_number
  FROM bid
)
WHERE rank_number <= 1;
