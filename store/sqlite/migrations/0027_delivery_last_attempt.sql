-- 0027_delivery_last_attempt: a delivery's latest attempt in its own row.
--
-- Recording an attempt updated the delivery's row and inserted a row of
-- delivery_attempts (two more B-trees written per delivery, the table's
-- and its index). The delivery row now holds its latest attempt (number,
-- latency and time beside last_status and last_error); delivery_attempts
-- holds the earlier ones, each moved there when the next attempt is
-- recorded. A delivery that succeeds at its first attempt, nearly all of
-- them, writes no delivery_attempts row. last_attempt_at is NULL while
-- the row holds no attempt: before the first, and in rows recorded before
-- this migration, whose attempts are all in delivery_attempts.
ALTER TABLE deliveries ADD COLUMN last_attempt INTEGER;
ALTER TABLE deliveries ADD COLUMN last_latency_ms INTEGER;
ALTER TABLE deliveries ADD COLUMN last_attempt_at INTEGER;
