-- 0004_channel_users_member_idx: a user's channels newest first, read by
-- one index walk however many channels the user is in.
--
-- The channel order is (created_at DESC, channel_id DESC) of channels. A
-- channel's created_at never changes after it is inserted, so each
-- relation carries a copy of it (channel_created_at), NULL while the
-- channel does not exist. Two triggers keep the copy right in the
-- transaction of the write, whatever statement writes: a relation takes
-- the channel's created_at when inserted, and a channel inserted after
-- relations to it (the schema allows that order) gives them its own.
-- The functions resolve table names in this schema (SET search_path FROM
-- CURRENT: Migrate runs with search_path set to the store's schema).
ALTER TABLE channel_users ADD COLUMN channel_created_at timestamptz;
UPDATE channel_users cu SET channel_created_at = c.created_at
    FROM channels c WHERE c.channel_id = cu.channel_id;
-- QueryChannels with memberOf: the user's member relations in channel order.
CREATE INDEX channel_users_member_idx ON channel_users (user_id, channel_created_at DESC, channel_id DESC)
    WHERE membership = 'member';

CREATE FUNCTION channel_users_sort_key() RETURNS trigger
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    NEW.channel_created_at := (SELECT created_at FROM channels WHERE channel_id = NEW.channel_id);
    RETURN NEW;
END
$$;
CREATE TRIGGER channel_users_sort_key BEFORE INSERT ON channel_users
    FOR EACH ROW EXECUTE FUNCTION channel_users_sort_key();

CREATE FUNCTION channels_sort_key() RETURNS trigger
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE channel_users SET channel_created_at = NEW.created_at WHERE channel_id = NEW.channel_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER channels_sort_key AFTER INSERT ON channels
    FOR EACH ROW EXECUTE FUNCTION channels_sort_key();
