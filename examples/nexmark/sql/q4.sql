-- Nexmark q4, average price for a category: per category, the average of
-- each auction's highest bid among the bids within the auction's life
-- (both ends inclusive).
--
-- The published Nexmark SQL (Apache Flink's nexmark suite) as it is, over
-- the views of tables.sql. The inner GROUP BY is an updating result (an
-- auction's maximum rises as bids come); the outer one takes an auction's
-- old maximum out of its category's average when the new one comes in.
-- `weir nexmark --api sql` writes the results table (with each row's
-- kind) to --output.
CREATE TABLE nexmark_q4 (
  id BIGINT,
  final BIGINT
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q4
SELECT
  Q.category,
  AVG(Q.final)
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
  GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
