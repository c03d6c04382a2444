-- Nexmark q20, expand bid with auction: every bid on an auction of category
-- 10, with the auction's columns.
--
-- The published Nexmark SQL (Apache Flink's nexmark suite) as it is, over
-- the views of tables.sql. A regular join: both inputs' rows are kept, so
-- its state grows with them. `weir nexmark --api sql` writes the results
-- table to --output.
CREATE TABLE nexmark_q20 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel VARCHAR,
  url VARCHAR,
  bid_date_time TIMESTAMP(3),
  bid_extra VARCHAR,
  itemName VARCHAR,
  description VARCHAR,
  initialBid BIGINT,
  reserve BIGINT,
  auction_date_time TIMESTAMP(3),
  expires TIMESTAMP(3),
  seller BIGINT,
  category BIGINT,
  auction_extra VARCHAR
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q20
SELECT
  B.auction, B.bidder, B.price, B.channel, B.url, B.`dateTime`, B.extra,
  A.itemName, A.description, A.initialBid, A.reserve, A.`dateTime`, A.expires, A.seller, A.category, A.extra
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10;
