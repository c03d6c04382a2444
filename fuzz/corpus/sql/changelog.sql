CREATE TABLE u (id BIGINT PRIMARY KEY, kind VARCHAR) WITH (connector = 'values', rows = '1,a');
CREATE TABLE e (k VARCHAR, v BIGINT, ts TIMESTAMP(3)) WITH (connector = 'values', watermark = 'ts - INTERVAL ''1'' SECOND', rows = 'a,1,1000');
CREATE TABLE o (n BIGINT, m BIGINT) WITH (connector = 'print');
INSERT INTO o SELECT SUM(n), MAX(n) FROM (SELECT k, COUNT(*) AS n FROM TUMBLE((SELECT k, PROCTIME() AS pt FROM e), DESCRIPTOR(pt), INTERVAL '1' HOUR) AS w JOIN u ON w.k = u.kind GROUP BY k, window_start, window_end) AS c;
