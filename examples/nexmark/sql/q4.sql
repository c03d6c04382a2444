-- Nexmark q4, average price for a category: per category, the average of
-- each auction's highest bid among the bids within the auction's life
-- (both ends inclusive).
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite):
-- the subquery in FROM is named (AS q; PostgreSQL's grammar needs a name).
-- Over the tables of tables.sql; connector options are written name =
-- 'value'. The inner GROUP BY is an updating result (an auction's maximum
-- rises as bids come); the outer one takes an auction's old maximum out of
-- its category's average when the new one comes in. `weir nexmark --api
-- sql` writes the results table (with each row's kind) to --output.
CREATE TABLE nexmark_q4 (
  id BIGINT,
  final BIGINT
) WITH (connector = 'blackhole');

INSERT INTO nexmark_q4
SELECT
  Q.category,
  AVG(Q.final)
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
  GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
