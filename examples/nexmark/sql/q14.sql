-- Nexmark q14, calculation: bids whose price in euros lies between one
-- and fifty million, with the part of the day they came in and how many
-- 'c' their extra field has.
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite):
-- count_char is built in here (the suite registers it with CREATE FUNCTION
-- from a Java class). Over the tables of tables.sql; connector options are
-- written name = 'value'. The price is an exact DECIMAL(23, 3). `weir
-- nexmark --api sql` writes the results table to --output.
CREATE TABLE nexmark_q14 (
  auction BIGINT,
  bidder BIGINT,
  price DECIMAL(23, 3),
  bid_time_type VARCHAR,
  date_time TIMESTAMP(3),
  extra VARCHAR,
  c_counts BIGINT
) WITH (connector = 'blackhole');

INSERT INTO nexmark_q14
SELECT
  auction,
  bidder,
  0.908 * price AS price,
  CASE
    WHEN HOUR(date_time) >= 8 AND HOUR(date_time) <= 18 THEN 'dayTime'
    WHEN HOUR(date_time) <= 6 OR HOUR(date_time) >= 20 THEN 'nightTime'
    ELSE 'otherTime'
  END AS bid_time_type,
  date_time,
  extra,
  count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
