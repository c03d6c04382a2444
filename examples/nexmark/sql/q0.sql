-- Nexmark q0, pass-through: every bid, as it came.
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite):
-- the bid table is declared here (there a view over the generator's
-- table); its fields are named in snake_case (date_time, not dateTime;
-- either matches); connector options are written name = 'value', not
-- 'name' = 'value' (PostgreSQL's grammar). `weir nexmark --api sql` writes
-- the results table to --output.
CREATE TABLE bid (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel VARCHAR,
  url VARCHAR,
  date_time TIMESTAMP(3),
  extra VARCHAR
) WITH (connector = 'nexmark', watermark = 'date_time - INTERVAL ''4'' SECOND');

CREATE TABLE nexmark_q0 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  date_time TIMESTAMP(3),
  extra VARCHAR
) WITH (connector = 'blackhole');

INSERT INTO nexmark_q0
SELECT auction, bidder, price, date_time, extra FROM bid;
