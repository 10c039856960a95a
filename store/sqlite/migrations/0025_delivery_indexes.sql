-- 0025_delivery_indexes: delivery indexes that a delivery's life writes less.
--
-- deliveries_due_idx holds the pending deliveries only, as Postgres's
-- deliveries_pending_idx does: a delivery finished leaves it (one entry
-- deleted) instead of moving to the 'delivered' part of it, and the
-- claims, NextDeliveryAt and CountDeliveries read only pending ones.
-- deliveries_webhook_idx is ascending: a new delivery is its webhook's
-- newest and goes to the end of the index, where SQLite appends to the
-- last page, instead of the front, where every insert moved entries
-- between pages. ListDeliveries reads it backwards (newest first).
DROP INDEX deliveries_due_idx;
CREATE INDEX deliveries_due_idx ON deliveries (next_attempt_at, request_id) WHERE state = 'pending';
DROP INDEX deliveries_webhook_idx;
CREATE INDEX deliveries_webhook_idx ON deliveries (webhook_id, created_at, request_id);
