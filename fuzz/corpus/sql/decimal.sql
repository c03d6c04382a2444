CREATE TABLE m (k VARCHAR, amount DECIMAL(10, 2), n BIGINT) WITH (connector = 'values', rows = '
a,10.25,3
b,-0.75,-2
');
CREATE TABLE o (a DECIMAL(23, 3), b VARCHAR, c BIGINT) PARTITION BY LIST (b) WITH (connector = 'print');
INSERT INTO o SELECT 0.908 * amount / -3 + n, CAST(CAST(amount AS DECIMAL(4, 1)) AS VARCHAR), COUNT_CHAR(k, 'a') FROM m WHERE amount BETWEEN -1 AND 10.25 AND n IN (-2, 3);
