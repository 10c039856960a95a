-- 0012_stream_tickets: the unused tickets of POST /events/ticket, by the
-- SHA-256 of the ticket, so that a ticket issued by one process opens a
-- stream on any other. Redeeming is DELETE ... RETURNING: of two processes
-- redeeming one ticket at once, one gets the row. The stream's retention
-- job deletes the expired ones.
CREATE TABLE stream_tickets (
    hash       text COLLATE "C" PRIMARY KEY,
    user_id    text NOT NULL,
    admin      boolean NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX stream_tickets_expiry_idx ON stream_tickets (expires_at);
