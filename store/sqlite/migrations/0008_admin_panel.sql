-- 0008_admin_panel: admin panel sign-in. password_hash is the bcrypt hash
-- of an admin's panel password (NULL: none set). admin_sessions holds the
-- panel's sessions, keyed by the SHA-256 of the id in the browser's cookie.
ALTER TABLE admins ADD COLUMN password_hash BLOB;

CREATE TABLE admin_sessions (
    id_hash      BLOB PRIMARY KEY,
    name         TEXT NOT NULL,
    csrf_token   TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL
);
CREATE INDEX admin_sessions_name_idx ON admin_sessions (name);
CREATE INDEX admin_sessions_seen_idx ON admin_sessions (last_seen_at);
