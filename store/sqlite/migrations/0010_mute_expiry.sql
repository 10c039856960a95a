-- 0010_mute_expiry: the mutes still to end or to be announced as ended,
-- read by LapsedMutes and NextMuteEnd. A mute that ended by time keeps its
-- mute_timeout until the Service announces it and sets it back to NULL, so
-- these partial indexes hold only the muted rows and the lapsed ones not
-- yet announced.
CREATE INDEX channels_mute_idx ON channels (mute_timeout)
    WHERE mute_timeout IS NOT NULL AND is_closed = 0;
CREATE INDEX channel_users_mute_idx ON channel_users (mute_timeout)
    WHERE mute_timeout IS NOT NULL AND membership = 'member';
