-- 0014_stream_ticket_access: a ticket carries the access it was issued under,
-- so that it opens a stream only while that access is valid: the admin
-- account and its token's hash, or the user token's iat and exp (NULL when
-- the claim is absent). The tickets issued before (valid 60 s, without
-- this) are dropped.
DELETE FROM stream_tickets;
ALTER TABLE stream_tickets
    ADD COLUMN admin_name       text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN token_hash       bytea NOT NULL DEFAULT '\x',
    ADD COLUMN token_issued_at  timestamptz,
    ADD COLUMN token_expires_at timestamptz;
