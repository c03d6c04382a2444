CREATE TEMPORARY TABLE IF NOT EXISTS `e` (
  k INT NOT NULL,
  r ROW<a BIGINT, `b` ROW(c STRING 'a field', d TIMESTAMP(3))>,
  t AS r.b.d,
  m TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,
  WATERMARK FOR t AS t - INTERVAL '1' SECOND,
  CONSTRAINT pk PRIMARY KEY (k) NOT ENFORCED
) COMMENT 'x' PARTITIONED BY (k) WITH ('connector' = 'kafka', 'topic' = 't', format = 'json', "json.ignore-parse-errors" = 'true')
LIKE base (EXCLUDING OPTIONS, INCLUDING WATERMARKS);
SET 'table.exec.mini-batch.size' = '10';
RESET;
ALTER TABLE e SET ('topic' = 'u');
DROP TEMPORARY VIEW IF EXISTS v;
