SET "table.optimizer.agg-phase-strategy" = 'TWO_PHASE';
SET "table.exec.mini-batch.size" = 10;
CREATE TABLE t (k VARCHAR, v BIGINT) WITH (connector = 'values', rows = 'a,1');
CREATE TABLE o (k VARCHAR, n BIGINT, d BIGINT) WITH (connector = 'print');
INSERT INTO o SELECT k, COUNT(*), COUNT(DISTINCT v) FROM t GROUP BY k;
