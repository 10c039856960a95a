-- 0024_message_text: the text of a text message beside its data.
--
-- text holds the string of a message whose data is exactly {"text": <string>}
-- and is NULL otherwise (other data, a deleted message, and the rows written
-- before this migration). Reading a message makes its data from the text
-- when there is one, without decoding the JSON of data, which stays the
-- message's data as stored. Every statement that writes data writes text.
ALTER TABLE messages ADD COLUMN text TEXT;

-- A statement that changes data and leaves text as it was (one that does
-- not write text) clears text, so that text is never stale.
CREATE TRIGGER messages_text_stale AFTER UPDATE OF data ON messages
WHEN NEW.text IS NOT NULL AND NEW.text IS OLD.text AND NEW.data IS NOT OLD.data
BEGIN
    UPDATE messages SET text = NULL WHERE rowid = NEW.rowid;
END;
