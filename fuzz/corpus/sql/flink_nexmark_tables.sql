-- The Nexmark events, declared as the nexmark benchmark's Flink SQL
-- declares them: one table of events whose kind is event_type (0 a
-- person, 1 an auction, 2 a bid) and whose fields are ROW columns, event
-- time a computed column with watermarks 4 s behind the newest seen; and
-- a view per kind. Each query's file is run after this one.
--
-- A view's `event_type = k` reaches the generator's source: a query of
-- bids reads bid rows only.
CREATE TABLE nexmark_events (
  event_type INT,
  person ROW<
    id BIGINT,
    name VARCHAR,
    emailAddress VARCHAR,
    creditCard VARCHAR,
    city VARCHAR,
    state VARCHAR,
    `dateTime` TIMESTAMP(3),
    extra VARCHAR>,
  auction ROW<
    id BIGINT,
    itemName VARCHAR,
    description VARCHAR,
    initialBid BIGINT,
    reserve BIGINT,
    `dateTime` TIMESTAMP(3),
    expires TIMESTAMP(3),
    seller BIGINT,
    category BIGINT,
    extra VARCHAR>,
  bid ROW<
    auction BIGINT,
    bidder BIGINT,
    price BIGINT,
    channel VARCHAR,
    url VARCHAR,
    `dateTime` TIMESTAMP(3),
    extra VARCHAR>,
  `dateTime` AS CASE
    WHEN event_type = 0 THEN person.`dateTime`
    WHEN event_type = 1 THEN auction.`dateTime`
    ELSE bid.`dateTime`
  END,
  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (
  'connector' = 'nexmark'
);

CREATE VIEW person AS
SELECT person.id, person.name, person.emailAddress, person.creditCard, person.city, person.state,
       `dateTime`, person.extra
FROM nexmark_events WHERE event_type = 0;

CREATE VIEW auction AS
SELECT auction.id, auction.itemName, auction.description, auction.initialBid, auction.reserve,
       `dateTime`, auction.expires, auction.seller, auction.category, auction.extra
FROM nexmark_events WHERE event_type = 1;

CREATE VIEW bid AS
SELECT bid.auction, bid.bidder, bid.price, bid.channel, bid.url, `dateTime`, bid.extra
FROM nexmark_events WHERE event_type = 2;
