-- 0022_presence: who has open event streams, on which process.
--
-- presence_processes holds each process's lease; presence_streams a row per
-- process and user with at least one open stream there (its primary key
-- answers "which processes hold this user", presence_streams_process_idx
-- "which users does this process hold"). The user's presence lives on its
-- row: online and last_active_at as returned, offline_since while the
-- grace period after its last stream runs; users_offline_since_idx holds
-- only those rows and finds the users whose grace period ended. The
-- columns have constant defaults, so adding them rewrites no row.
ALTER TABLE users ADD COLUMN online boolean NOT NULL DEFAULT false;
ALTER TABLE users ADD COLUMN last_active_at timestamptz;
ALTER TABLE users ADD COLUMN offline_since timestamptz;
CREATE INDEX users_offline_since_idx ON users (offline_since) WHERE offline_since IS NOT NULL;

CREATE TABLE presence_processes (
    process_id text COLLATE "C" PRIMARY KEY,
    renewed_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX presence_processes_expires_idx ON presence_processes (expires_at);

CREATE TABLE presence_streams (
    user_id    text COLLATE "C" NOT NULL,
    process_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (user_id, process_id)
);
CREATE INDEX presence_streams_process_idx ON presence_streams (process_id, user_id);
