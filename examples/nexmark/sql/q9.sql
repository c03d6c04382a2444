-- Nexmark q9, winning bids: per auction, the highest bid within the
-- auction's life (both ends inclusive; of equal prices the earlier bid),
-- with the auction's columns.
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite):
-- the subquery in FROM is named (AS r; PostgreSQL's grammar needs a name).
-- Over the tables of tables.sql; connector options are written name =
-- 'value'. A regular join, then TOP-1 per auction: an updating result (a
-- better bid replaces the auction's row). `weir nexmark --api sql` writes
-- the results table (with each row's kind) to --output.
CREATE TABLE nexmark_q9 (
  id BIGINT,
  item_name VARCHAR,
  description VARCHAR,
  initial_bid BIGINT,
  reserve BIGINT,
  date_time TIMESTAMP(3),
  expires TIMESTAMP(3),
  seller BIGINT,
  category BIGINT,
  extra VARCHAR,
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  bid_date_time TIMESTAMP(3),
  bid_extra VARCHAR
) WITH (connector = 'blackhole');

INSERT INTO nexmark_q9
SELECT
  id, item_name, description, initial_bid, reserve, date_time, expires, seller, category, extra,
  auction, bidder, price, bid_date_time, bid_extra
FROM (
  SELECT A.*, B.auction, B.bidder, B.price, B.date_time AS bid_date_time, B.extra AS bid_extra,
    ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.date_time ASC) AS rownum
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
) AS r
WHERE rownum <= 1;
