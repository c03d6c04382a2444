CREATE TABLE t (a BIGINT, s VARCHAR, ts TIMESTAMP(3)) WITH (connector = 'print', watermark = '-- Nexmark q0,ND');
