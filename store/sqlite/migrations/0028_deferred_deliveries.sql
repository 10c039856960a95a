-- 0028_deferred_deliveries: deliveries taken directly kept with their event.
--
-- A delivery that a dispatcher of the process takes directly from the
-- transaction that causes it (chat.DeliveryDeferrer) is not inserted into
-- deliveries with its change, then updated when its attempt is recorded:
-- it is kept in its event's row (events.deferred, JSON) and inserted once,
-- in its final state, with its attempt. Each store that defers deliveries
-- keeps a row in deferred_owners: every deferred delivery it wrote in an
-- event of id <= resolved_through is in deliveries, and the row is kept
-- alive until `until` (Unix ms). Once a row has lapsed, any store sharing
-- the file stores that owner's remaining deferred deliveries whose leases
-- have run out, pending, and deletes the row (deferred.go).
ALTER TABLE events ADD COLUMN deferred TEXT;

CREATE TABLE deferred_owners (
    store_id         TEXT PRIMARY KEY,
    resolved_through INTEGER NOT NULL,
    until            INTEGER NOT NULL
) WITHOUT ROWID;
