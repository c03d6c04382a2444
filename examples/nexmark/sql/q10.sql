-- Nexmark q10, log to file system: every bid into a file table partitioned
-- by its day and minute (UTC).
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite):
-- PARTITION BY LIST (dt, hm) for Flink's PARTITIONED BY (dt, hm)
-- (PostgreSQL's grammar); the filesystem options of the published text
-- (rolling every minute, success files when the watermark passes a
-- partition) are not there: part files are committed at checkpoints, as
-- the DataStream version's. Over the tables of tables.sql; connector
-- options are written name = 'value'. `weir nexmark --api sql --output
-- DIR` writes the partitions under DIR.
CREATE TABLE nexmark_q10 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  date_time TIMESTAMP(3),
  extra VARCHAR,
  dt VARCHAR,
  hm VARCHAR
) PARTITION BY LIST (dt, hm) WITH (connector = 'filesystem', path = '/tmp/nexmark-q10');

INSERT INTO nexmark_q10
SELECT auction, bidder, price, date_time, extra, DATE_FORMAT(date_time, 'yyyy-MM-dd'), DATE_FORMAT(date_time, 'HH:mm')
FROM bid;
