-- Nexmark q2, selection: the bids on every 123rd auction.
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite):
-- the bid table is declared here (there a view over the generator's
-- table); connector options are written name = 'value'. `weir nexmark
-- --api sql` writes the results table to --output.
CREATE TABLE bid (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel VARCHAR,
  url VARCHAR,
  date_time TIMESTAMP(3),
  extra VARCHAR
) WITH (connector = 'nexmark', watermark = 'date_time - INTERVAL ''4'' SECOND');

CREATE TABLE nexmark_q2 (
  auction BIGINT,
  price BIGINT
) WITH (connector = 'blackhole');

INSERT INTO nexmark_q2
SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;
