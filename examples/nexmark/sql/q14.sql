-- Nexmark q14, calculation: bids whose price in euros lies between one and
-- fifty million, with the part of the day they came in and how many 'c'
-- their extra field has.
--
-- The published Nexmark SQL (Apache Flink's nexmark suite) but for its
-- CREATE FUNCTION count_char AS '<a Java class>': count_char is built in
-- (user-defined functions are not supported yet). Over the views of
-- tables.sql. The price is an exact DECIMAL(23, 3). `weir nexmark --api
-- sql` writes the results table to --output.
CREATE TABLE nexmark_q14 (
  auction BIGINT,
  bidder BIGINT,
  price DECIMAL(23, 3),
  bidTimeType VARCHAR,
  `dateTime` TIMESTAMP(3),
  extra VARCHAR,
  c_counts BIGINT
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q14
SELECT
  auction,
  bidder,
  0.908 * price AS price,
  CASE
    WHEN HOUR(`dateTime`) >= 8 AND HOUR(`dateTime`) <= 18 THEN 'dayTime'
    WHEN HOUR(`dateTime`) <= 6 OR HOUR(`dateTime`) >= 20 THEN 'nightTime'
    ELSE 'otherTime'
  END AS bidTimeType,
  `dateTime`,
  extra,
  count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
