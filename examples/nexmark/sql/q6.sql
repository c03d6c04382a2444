-- Nexmark q6, average selling price by seller: per seller, the average
-- (rounded half up) of the winning prices of its 10 most recent auctions
-- won (by the winning bid's time, then price). An auction's winner is its
-- highest bid before it expires at or above its reserve price, of equal
-- prices the earlier bid.
--
-- Not the published Nexmark SQL: its q6 (AVG(final) OVER (PARTITION BY
-- seller ORDER BY `dateTime` ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
-- over the updating maxima of q4) is a query Apache Flink cannot run (an
-- OVER window over an updating result) and averages 11 rows. This text
-- states the query's definition (as its DataStream version, after Beam's)
-- with TOP-N: TOP-1 per auction (the winner, updated while bids come), then
-- the 10 most recent winners per seller (a TOP-N over that updating result:
-- a replaced winner is taken out), then their average. The rounding is
-- integer arithmetic: (2 * sum + n) / (2 * n). Its rows differ from the
-- DataStream version's while auctions are open (an open auction's best bid
-- counts as its winner here); the final table is the same. Over the views
-- of tables.sql. `weir nexmark --api sql` writes the results table (with
-- each row's kind) to --output.
CREATE TABLE nexmark_q6 (
  seller BIGINT,
  avg_price BIGINT
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q6
SELECT seller, (2 * SUM(price) + COUNT(*)) / (2 * COUNT(*))
FROM (
  SELECT seller, price, bid_time,
    ROW_NUMBER() OVER (PARTITION BY seller ORDER BY bid_time DESC, price DESC) AS recent
  FROM (
    SELECT A.seller, B.price, B.`dateTime` AS bid_time,
      ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.`dateTime` ASC) AS rank
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.`dateTime` < A.expires AND B.price >= A.reserve
  ) AS winners
  WHERE rank = 1
) AS last_wins
WHERE recent <= 10
GROUP BY seller;
