-- Nexmark q3, local item suggestion: the auctions of category 10 whose
-- seller lives in Oregon, Idaho or California, with the seller's name and
-- place.
--
-- The published Nexmark SQL (Apache Flink's nexmark suite) as it is, over
-- the views of tables.sql. A regular join; a person's id is unique (the
-- nexmark connector says so of person.id), so an auction's row waits only
-- until its seller comes. `weir nexmark --api sql` writes the results
-- table to --output.
CREATE TABLE nexmark_q3 (
  name VARCHAR,
  city VARCHAR,
  state VARCHAR,
  id BIGINT
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q3
SELECT
  P.name, P.city, P.state, A.id
FROM
  auction AS A INNER JOIN person AS P ON A.seller = P.id
WHERE
  A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');
