-- 0012_stream_tickets: the unused tickets of POST /events/ticket, by the
-- SHA-256 of the ticket, so that any process sharing the file redeems them
-- (DELETE ... RETURNING: once). The stream's retention job deletes the
-- expired ones.
CREATE TABLE stream_tickets (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    admin      INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX stream_tickets_expiry_idx ON stream_tickets (expires_at);
