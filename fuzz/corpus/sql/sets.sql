CREATE TABLE t (k VARCHAR, v BIGINT, ts TIMESTAMP(3)) WITH (connector = 'values', watermark = 'ts', rows = 'a,1,1000');
CREATE TABLE d (k VARCHAR, v DECIMAL(10, 2), ts TIMESTAMP(3)) WITH (connector = 'values', watermark = 'ts', rows = 'a,1.50,1000');
CREATE VIEW w (key, value, ts) AS SELECT k, v * 10, ts FROM t WHERE v IS NOT NULL;
CREATE TABLE o (k VARCHAR, v DECIMAL(21, 2)) WITH (connector = 'print');
INSERT INTO o SELECT DISTINCT k, v FROM t UNION ALL SELECT k, v FROM d;
INSERT INTO o SELECT key, SUM(value) FROM CUMULATE(w, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '3' SECOND) GROUP BY key, window_start, window_end;
INSERT INTO o SELECT l.k, r.v FROM t AS l JOIN d AS r ON l.k = r.k AND r.ts BETWEEN l.ts - INTERVAL '1' SECOND AND l.ts;
