-- Nexmark q13, bounded side-input join: every bid with the value its
-- auction id (modulo 10000) has in a side-input file of "key,value" lines.
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite),
-- which looks the key up with a processing-time lookup join (JOIN
-- side_input FOR SYSTEM_TIME AS OF B.p_time): PostgreSQL's grammar has no
-- FOR SYSTEM_TIME AS OF, so it is a join with the side input read as a
-- bounded table whose key is its primary key. The file is read once; a bid
-- whose key has come is joined at once and not kept (a join on a unique
-- side), one that comes before it waits. Every key exists, so the rows are
-- the lookup join's. `weir nexmark --api sql` points the table at
-- --side-input (or the 10000 lines "i,i" it writes) and writes the results
-- table to --output. Over the tables of tables.sql.
CREATE TABLE side_input (
  key BIGINT PRIMARY KEY,
  value VARCHAR
) WITH (connector = 'filesystem', path = 'side_input.txt', format = 'csv');

CREATE TABLE nexmark_q13 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  date_time TIMESTAMP(3),
  value VARCHAR
) WITH (connector = 'blackhole');

INSERT INTO nexmark_q13
SELECT B.auction, B.bidder, B.price, B.date_time, S.value
FROM bid AS B JOIN side_input AS S ON MOD(B.auction, 10000) = S.key;
