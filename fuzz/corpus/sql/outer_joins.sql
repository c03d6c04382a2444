CREATE TABLE l (id BIGINT, name VARCHAR) WITH (connector = 'values', rows = '1,one');
CREATE TABLE r (id BIGINT, x DOUBLE) WITH (connector = 'values', rows = '1,1.5');
CREATE TABLE o (name VARCHAR, x DOUBLE, n BIGINT) WITH (connector = 'print');
INSERT INTO o SELECT name, x, c.n FROM l FULL JOIN r ON l.id = r.id AND x > 1
  LEFT JOIN (SELECT id, COUNT(*) AS n FROM r GROUP BY id) AS c ON l.id = c.id WHERE r.id IS NULL;
