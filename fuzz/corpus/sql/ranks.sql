CREATE TABLE t (g VARCHAR, score BIGINT, ts TIMESTAMP(3)) WITH (connector = 'values', watermark = 'ts', rows = 'a,1,1000');
CREATE TABLE u (g VARCHAR PRIMARY KEY, n BIGINT) WITH (connector = 'upsert-kafka', topic = 'u', "properties.bootstrap.servers" = 'h:1', "key.format" = 'csv', "value.format" = 'json');
CREATE TABLE o (g VARCHAR, score BIGINT, r BIGINT) WITH (connector = 'print');
INSERT INTO o SELECT g, score, r FROM (SELECT g, score, DENSE_RANK() OVER (PARTITION BY g ORDER BY score DESC) AS r FROM t) AS q WHERE r <= 2;
INSERT INTO o SELECT window_start, score, r FROM (SELECT window_start, window_end, score, RANK() OVER (PARTITION BY window_start, window_end ORDER BY score) AS r FROM TUMBLE(t, DESCRIPTOR(ts), INTERVAL '1' SECOND)) AS w WHERE r = 1;
INSERT INTO u SELECT g, COUNT(*) FROM t GROUP BY g HAVING COUNT(*) > 1;
INSERT INTO o SELECT g, n, 0 FROM u WHERE n > 2;
