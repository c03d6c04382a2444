CREATE TABLE b (item VARCHAR, price BIGINT, ts TIMESTAMP(3)) WITH (connector = 'values', "scan.parallelism" = '1', watermark = 'ts', rows = 'x,1,1000');
CREATE TABLE o (item VARCHAR, s BIGINT, n BIGINT, m BIGINT) WITH (connector = 'print');
INSERT INTO o SELECT item, SUM(price) OVER w, COUNT(DISTINCT price) FILTER (WHERE price > 1) OVER w, 2 * MAX(price) OVER w FROM b WHERE price > 0 WINDOW w AS (PARTITION BY item ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW);
INSERT INTO o SELECT item, price, rn, 0 FROM (SELECT item, price, ROW_NUMBER() OVER (PARTITION BY item ORDER BY price DESC) AS rn FROM (SELECT item, SUM(price) AS price FROM b GROUP BY item) AS g) AS r WHERE rn <= 2;
