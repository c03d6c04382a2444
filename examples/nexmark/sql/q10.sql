-- Nexmark q10, log to file system: every bid into a file table partitioned
-- by its day and minute (UTC).
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite):
-- the filesystem options of the published text (rolling every minute,
-- success files when the watermark passes a partition) are not there (weir
-- refuses them by name: its part files are committed at checkpoints, as
-- the DataStream version's). Over the views of tables.sql. `weir nexmark
-- --api sql --output DIR` writes the partitions under DIR.
CREATE TABLE nexmark_q10 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  `dateTime` TIMESTAMP(3),
  extra VARCHAR,
  dt STRING,
  hm STRING
) PARTITIONED BY (dt, hm) WITH (
  'connector' = 'filesystem',
  'path' = 'file:///tmp/nexmark-q10',
  'format' = 'csv'
);

INSERT INTO nexmark_q10
SELECT auction, bidder, price, `dateTime`, extra, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'), DATE_FORMAT(`dateTime`, 'HH:mm')
FROM bid;
