-- 0007_event_log: the event log read by event streams.
--
-- Ids must increase in commit order, which a sequence does not give (a
-- transaction that took 5 may commit before the one that took 4, and a
-- reader that saw 5 would never see 4). So ids come from one counter row,
-- event_log_head, updated by the appending statement: the row lock is held
-- until commit, so the next appender takes its ids only after this one
-- committed. user_ids is a JSON array of the users the event is about.
CREATE TABLE event_log_head (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    last_id bigint NOT NULL
);
INSERT INTO event_log_head (one, last_id) VALUES (true, 0);

CREATE TABLE events (
    id         bigint PRIMARY KEY,
    name       text NOT NULL,
    channel_id text NOT NULL,
    user_ids   text NOT NULL,
    data       bytea NOT NULL,
    created_at timestamptz NOT NULL
);
