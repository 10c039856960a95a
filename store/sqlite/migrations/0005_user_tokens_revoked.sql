-- 0005_user_tokens_revoked: when set (milliseconds since the epoch),
-- every user token of the user issued before this time is refused.
ALTER TABLE users ADD COLUMN tokens_revoked_at INTEGER;
