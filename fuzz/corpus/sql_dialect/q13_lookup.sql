-- Nexmark q13, bounded side-input join: every bid with the value its
-- auction id (modulo 10000) has in a side-input file of "key,value" lines.
--
-- The published Nexmark SQL (Apache Flink's nexmark suite), with the
-- filesystem connector's current option names and the side input's key
-- declared its primary key. The lookup join (FOR SYSTEM_TIME AS OF the
-- bid's processing time) of a file, a table that never changes, is a join
-- with it: the file is read once; a bid whose key has come is joined at
-- once and not kept (a join on a unique side), one that comes before it
-- waits. Every key exists, so the rows are the lookup join's. `weir
-- nexmark --api sql` points the table at --side-input (or the 10000 lines
-- "i,i" it writes) and writes the results table to --output. Over the
-- views of tables.sql.
CREATE TABLE side_input (
  key BIGINT,
  `value` VARCHAR,
  PRIMARY KEY (key) NOT ENFORCED
) WITH (
  'connector' = 'filesystem',
  'path' = 'side_input.txt',
  'format' = 'csv'
);

CREATE TABLE nexmark_q13 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  `dateTime` TIMESTAMP(3),
  `value` VARCHAR
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q13
SELECT
  B.auction,
  B.bidder,
  B.price,
  B.`dateTime`,
  S.`value`
FROM (SELECT *, PROCTIME() AS p_time FROM bid) B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON mod(B.auction, 10000) = S.key;
