-- Nexmark q7, highest bid: per 10-second tumbling window, the bids of the
-- window whose price is the window's highest.
--
-- Adapted from the published Nexmark SQL (Apache Flink's nexmark suite),
-- which joins every bid with each window's maximum price on the price and a
-- time range (B.`dateTime` BETWEEN window_end - 10 s AND window_end,
-- closed at both ends, so a bid at exactly window_end, which belongs to
-- the next window, is also taken). Here the bids are windowed too and the
-- two are a window join on the price and the window: the bids of [start,
-- end), as the DataStream version gives (Beam's semantics), and a window's
-- rows are dropped at its end; output columns in the sink's order. Over the
-- views of tables.sql.
CREATE TABLE nexmark_q7 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  `dateTime` TIMESTAMP(3),
  extra VARCHAR
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q7
SELECT B.auction, B.bidder, B.price, B.`dateTime`, B.extra
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND)) B
JOIN (
  SELECT MAX(price) AS maxprice, window_start, window_end
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice AND B.window_start = B1.window_start AND B.window_end = B1.window_end;
