-- 0018_blocks: a user's blocks of other users (docs/api.md, "Blocking"). The
-- primary key serves a user's list; blocks_blocked_idx the question
-- "who among these users blocks this one" (adding members to a channel).
CREATE TABLE blocks (
    user_id    text COLLATE "C" NOT NULL,
    blocked_id text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, blocked_id)
);
CREATE INDEX blocks_blocked_idx ON blocks (blocked_id, user_id);
