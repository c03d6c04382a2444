-- Nexmark q20, expand bid with auction: every bid on an auction of
-- category 10, with the auction's columns.
--
-- The published Nexmark SQL (Apache Flink's nexmark suite), over the
-- tables of tables.sql; the result table's columns are named as they are
-- there; connector options are written name = 'value'. A regular join:
-- both inputs' rows are kept, so its state grows with them. `weir nexmark
-- --api sql` writes the results table to --output.
CREATE TABLE nexmark_q20 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel VARCHAR,
  url VARCHAR,
  bid_date_time TIMESTAMP(3),
  bid_extra VARCHAR,
  item_name VARCHAR,
  description VARCHAR,
  initial_bid BIGINT,
  reserve BIGINT,
  auction_date_time TIMESTAMP(3),
  expires TIMESTAMP(3),
  seller BIGINT,
  category BIGINT,
  auction_extra VARCHAR
) WITH (connector = 'blackhole');

INSERT INTO nexmark_q20
SELECT
  B.auction, B.bidder, B.price, B.channel, B.url, B.date_time, B.extra,
  A.item_name, A.description, A.initial_bid, A.reserve, A.date_time, A.expires, A.seller, A.category, A.extra
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10;
