-- Nexmark q21, add channel id: each bid with the id of its channel, the
-- four big channels by name, the others from the channel_id parameter of
-- the URL; bids with neither are dropped.
--
-- The published Nexmark SQL (Apache Flink's nexmark suite) as it is, over
-- the views of tables.sql. REGEXP_EXTRACT's expression is RE2's syntax (the
-- same as Java's here). `weir nexmark --api sql` writes the results table
-- to --output.
CREATE TABLE nexmark_q21 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel VARCHAR,
  channel_id VARCHAR
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q21
SELECT
  auction, bidder, price, channel,
  CASE
    WHEN LOWER(channel) = 'apple' THEN '0'
    WHEN LOWER(channel) = 'google' THEN '1'
    WHEN LOWER(channel) = 'facebook' THEN '2'
    WHEN LOWER(channel) = 'baidu' THEN '3'
    ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
  END AS channel_id
FROM bid
WHERE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) IS NOT NULL
   OR LOWER(channel) IN ('apple', 'google', 'facebook', 'baidu');
