-- Nexmark q9, winning bids: per auction, the highest bid within the
-- auction's life (both ends inclusive; of equal prices the earlier bid),
-- with the auction's columns.
--
-- The published Nexmark SQL (Apache Flink's nexmark suite) as it is. Over
-- the views of tables.sql. A regular join, then TOP-1 per auction: an
-- updating result (a better bid replaces the auction's row). `weir nexmark
-- --api sql` writes the results table (with each row's kind) to --output.
CREATE TABLE nexmark_q9 (
  id BIGINT,
  itemName VARCHAR,
  description VARCHAR,
  initialBid BIGINT,
  reserve BIGINT,
  `dateTime` TIMESTAMP(3),
  expires TIMESTAMP(3),
  seller BIGINT,
  category BIGINT,
  extra VARCHAR,
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  bid_dateTime TIMESTAMP(3),
  bid_extra VARCHAR
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q9
SELECT
  id, itemName, description, initialBid, reserve, `dateTime`, expires, seller, category, extra,
  auction, bidder, price, bid_dateTime, bid_extra
FROM (
  SELECT A.*, B.auction, B.bidder, B.price, B.`dateTime` AS bid_dateTime, B.extra AS bid_extra,
    ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.`dateTime` ASC) AS rownum
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
)
WHERE rownum <= 1;
