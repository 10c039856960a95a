-- 0007_event_log: the event log read by event streams. AUTOINCREMENT
-- never reuses an id, even after retention deleted the newest rows, and
-- SQLite's single writer assigns ids in commit order. user_ids is a JSON
-- array of the users the event is about.
CREATE TABLE events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    user_ids   TEXT NOT NULL,
    data       BLOB NOT NULL,
    created_at INTEGER NOT NULL
);
