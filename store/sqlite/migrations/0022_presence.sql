-- 0022_presence: who has open event streams, on which process.
--
-- presence_processes holds each process's lease; presence_streams a row per
-- process and user with at least one open stream there (its primary key
-- answers "which processes hold this user", presence_streams_process_idx
-- "which users does this process hold"). The user's presence lives on its
-- row: online and last_active_at as returned, offline_since (unix ms) while
-- the grace period after its last stream runs; users_offline_since_idx
-- finds the users whose grace period ended.
ALTER TABLE users ADD COLUMN online INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN last_active_at INTEGER;
ALTER TABLE users ADD COLUMN offline_since INTEGER;
CREATE INDEX users_offline_since_idx ON users (offline_since) WHERE offline_since IS NOT NULL;

CREATE TABLE presence_processes (
    process_id TEXT PRIMARY KEY,
    renewed_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX presence_processes_expires_idx ON presence_processes (expires_at);

CREATE TABLE presence_streams (
    user_id    TEXT NOT NULL,
    process_id TEXT NOT NULL,
    PRIMARY KEY (user_id, process_id)
) WITHOUT ROWID;
CREATE INDEX presence_streams_process_idx ON presence_streams (process_id, user_id);
