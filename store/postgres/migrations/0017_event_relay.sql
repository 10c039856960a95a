-- 0017_event_relay: writers no longer share a row.
--
-- A writing transaction inserts its events into events_pending, keyed by a
-- sequence: no lock is shared with other writers and nothing is notified.
-- The relay (relay.go) moves committed pending rows into events, one
-- pass at a time across all processes (a pass updates event_log_head only
-- if it still holds the value the pass read), in key order, numbering them
-- from event_log_head, which only the relay updates now: ids follow the relay's commits, so a reader that has
-- seen an id never later finds a smaller one. events.pending_seq keeps the
-- key a row had, so that a writer whose rows another process moved can
-- find their ids. Existing events keep their ids; no row moves, and a process of
-- the previous release that still appends to events directly takes the
-- same counter row lock as the relay, so ids stay unique and ordered.
CREATE TABLE events_pending (
    seq        bigserial PRIMARY KEY,
    name       text NOT NULL,
    channel_id text NOT NULL,
    user_ids   text NOT NULL,
    data       bytea NOT NULL,
    created_at timestamptz NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);

ALTER TABLE events ADD COLUMN pending_seq bigint;
