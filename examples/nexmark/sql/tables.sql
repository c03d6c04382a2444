-- The Nexmark tables over the generator, declared once for every query
-- (as the nexmark suite's ddl_views.sql declares its views): each query's
-- file is run after this one. Field names are snake_case (date_time for
-- dateTime; either spelling matches a generator field); connector options
-- are written name = 'value' (PostgreSQL's grammar). Event time is
-- date_time, with watermarks 4 s behind the newest seen. A person's and an
-- auction's id are their primary keys (unique, as the generator makes
-- them): a join on one keeps the other side's rows only until it comes.
CREATE TABLE person (
  id BIGINT PRIMARY KEY,
  name VARCHAR,
  email_address VARCHAR,
  credit_card VARCHAR,
  city VARCHAR,
  state VARCHAR,
  date_time TIMESTAMP(3),
  extra VARCHAR
) WITH (connector = 'nexmark', watermark = 'date_time - INTERVAL ''4'' SECOND');

CREATE TABLE auction (
  id BIGINT PRIMARY KEY,
  item_name VARCHAR,
  description VARCHAR,
  initial_bid BIGINT,
  reserve BIGINT,
  date_time TIMESTAMP(3),
  expires TIMESTAMP(3),
  seller BIGINT,
  category BIGINT,
  extra VARCHAR
) WITH (connector = 'nexmark', watermark = 'date_time - INTERVAL ''4'' SECOND');

CREATE TABLE bid (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel VARCHAR,
  url VARCHAR,
  date_time TIMESTAMP(3),
  extra VARCHAR
) WITH (connector = 'nexmark', watermark = 'date_time - INTERVAL ''4'' SECOND');
