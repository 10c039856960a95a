package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	chat "github.com/chatengine/chat"
)

// messageCols are the columns of a message row. The columns that hold
// their common value in most rows read as NULL then: the type text, an
// updated_at equal to created_at, and the JSON columns holding their empty
// value (tags, hashflag, reactions, mentions). A NULL costs the driver
// nothing, a text value a copy of its bytes and an interface allocation,
// an integer beyond 255 an allocation. The reactions read as NULL when
// stored as JSON null (a message created without any) and as the empty
// string when stored as {}. The data of a row with a text column (see
// messageText) reads as NULL and is made from the text, which needs no
// JSON decoding.
const messageCols = `m.message_id, m.channel_id, m.channel_segment, m.user_id, NULLIF(m.type, 'text'),
	CASE WHEN m.text IS NULL THEN m.data END, m.text,
	NULLIF(m.tags, '[]'), m.parent_id, m.is_deleted, m.created_at, m.edited_at, NULLIF(m.updated_at, m.created_at),
	m.children_number, m.flag_count, NULLIF(m.hashflag, '` + zeroHashflag + `'),
	CASE m.reactions WHEN 'null' THEN NULL WHEN '{}' THEN '' ELSE m.reactions END, m.reactions_count,
	NULLIF(m.mentioned_user_ids, '[]')`

// channelMessageCols are messageCols for a query of one channel's
// messages: the channel id is known and not read (a column costs the
// driver and SQLite about as much as its value when it is constant).
var channelMessageCols = strings.Replace(messageCols, "m.channel_id, ", "", 1)

// messageRow is the scan target of message rows, reused for every row of
// one query: the destinations (and the slice of pointers to them) are
// allocated once per query instead of once per row, and the messages
// themselves in chunks.
type messageRow struct {
	m chat.Message // the scanned scalar fields
	// Text columns scan into strings: the driver's value is assigned as is
	// (a sql.RawBytes destination would copy it again).
	data                      sql.NullString
	text                      sql.NullString
	typ                       sql.NullString
	tags, hashflag, reactions sql.NullString
	mentions                  sql.NullString
	parent                    sql.NullString
	edited, updated           sql.NullInt64
	created                   int64
	dest                      []any
	// channelID, when set, is the channel of every row, which the rows
	// leave out (channelMessageCols, see ofChannel).
	channelID string
	// chunk holds the messages returned so far and room for more; each
	// returned *Message points into a chunk, which saves an allocation per
	// row. size is the length of the next chunk.
	chunk []chat.Message
	size  int
}

// newMessageRow returns the scan target for a query of about n rows.
func newMessageRow(n int) *messageRow {
	r := &messageRow{size: min(max(n, 1), 64)}
	r.dest = []any{&r.m.MessageID, &r.m.ChannelID, &r.m.ChannelSegment, &r.m.UserID, &r.typ, &r.data, &r.text, &r.tags,
		&r.parent, &r.m.IsDeleted, &r.created, &r.edited, &r.updated, &r.m.ChildrenNumber, &r.m.FlagCount,
		&r.hashflag, &r.reactions, &r.m.ReactionsCount, &r.mentions}
	return r
}

// ofChannel makes r the scan target of channelMessageCols for the rows of
// channel id.
func (r *messageRow) ofChannel(id string) {
	r.channelID = id
	r.dest = slices.Delete(r.dest, 1, 2) // &r.m.ChannelID
}

// scan reads one row of messageCols into a new message.
func (r *messageRow) scan(sc scanner) (*chat.Message, error) {
	if err := sc.Scan(r.dest...); err != nil {
		return nil, err
	}
	return r.build()
}

// scanValues reads one row of messageCols from the driver's values, as
// scan does through database/sql (see rawList).
func (r *messageRow) scanValues(v []driver.Value) (*chat.Message, error) {
	if len(v) != len(r.dest) {
		return nil, errColumns
	}
	var err error
	text := func(x driver.Value) string {
		switch x := x.(type) {
		case string:
			return x
		case []byte:
			return string(x)
		case nil:
		default:
			err = errColumns
		}
		return ""
	}
	nullText := func(x driver.Value) sql.NullString {
		if x == nil {
			return sql.NullString{}
		}
		return sql.NullString{String: text(x), Valid: true}
	}
	integer := func(x driver.Value) int64 {
		switch x := x.(type) {
		case int64:
			return x
		case bool:
			if x {
				return 1
			}
			return 0
		default:
			err = errColumns
		}
		return 0
	}
	m := &r.m
	m.MessageID = text(v[0])
	// c: the columns after channel_id, which the rows of one channel leave
	// out (channelMessageCols).
	c := v[1:]
	if r.channelID == "" {
		m.ChannelID, c = text(v[1]), v[2:]
	}
	if len(c) != 17 {
		return nil, errColumns
	}
	m.ChannelSegment = integer(c[0])
	m.UserID, r.typ, r.data, r.text, r.tags = text(c[1]), nullText(c[2]), nullText(c[3]), nullText(c[4]), nullText(c[5])
	r.parent, m.IsDeleted, r.created = nullText(c[6]), integer(c[7]) != 0, integer(c[8])
	nullInteger := func(x driver.Value) sql.NullInt64 {
		if x == nil {
			return sql.NullInt64{}
		}
		return sql.NullInt64{Int64: integer(x), Valid: true}
	}
	r.edited, r.updated = nullInteger(c[9]), nullInteger(c[10])
	m.ChildrenNumber, m.FlagCount = int(integer(c[11])), int(integer(c[12]))
	r.hashflag, r.reactions, m.ReactionsCount = nullText(c[13]), nullText(c[14]), int(integer(c[15]))
	r.mentions = nullText(c[16])
	if err != nil {
		return nil, err
	}
	return r.build()
}

var errColumns = &chat.Error{Code: chat.CodeInternal, Message: "sqlite: unexpected column type in a message row"}

// build makes the next message of the query from the scanned row.
func (r *messageRow) build() (*chat.Message, error) {
	if len(r.chunk) == cap(r.chunk) {
		r.chunk = make([]chat.Message, 0, r.size)
		r.size = 64
	}
	r.chunk = append(r.chunk, r.m)
	m := &r.chunk[len(r.chunk)-1]
	if r.channelID != "" {
		m.ChannelID = r.channelID
	}
	if r.text.Valid {
		m.Data = map[string]any{"text": r.text.String}
	} else if err := fromJSON(r.data.String, &m.Data); err != nil {
		return nil, err
	}
	// NULL is the stored empty value ('[]', '{}', the zero hashflag).
	if !r.tags.Valid {
		m.Tags = []string{}
	} else if err := fromJSON(r.tags.String, &m.Tags); err != nil {
		return nil, err
	}
	if r.hashflag.Valid {
		if err := fromJSON(r.hashflag.String, &m.Hashflag); err != nil {
			return nil, err
		}
	}
	switch {
	case !r.reactions.Valid:
		m.Reactions = nil // stored as JSON null
	case r.reactions.String == "":
		m.Reactions = map[string]int{}
	default:
		if err := fromJSON(r.reactions.String, &m.Reactions); err != nil {
			return nil, err
		}
	}
	if r.mentions.Valid {
		if err := fromJSON(r.mentions.String, &m.MentionedUserIDs); err != nil {
			return nil, err
		}
	}
	m.Type = chat.MessageTypeText
	if r.typ.Valid {
		m.Type = chat.MessageType(r.typ.String)
	}
	m.ParentID = r.parent.String
	m.CreatedAt = fromMs(r.created)
	m.UpdatedAt = m.CreatedAt
	if r.updated.Valid {
		m.UpdatedAt = fromMs(r.updated.Int64)
	}
	m.EditedAt = fromMsp(r.edited)
	return m, nil
}

// messageText returns the value of the text column of a message with this
// data: the text when the data is exactly {"text": <string>} (the data of
// a text message), nil (NULL) otherwise. Reading such a row makes its Data
// from the text, as decoding the data column would (a string that would
// not come back unchanged from the JSON, with invalid UTF-8 or a NUL, is
// left to the data column).
func messageText(data map[string]any) any {
	if len(data) != 1 {
		return nil
	}
	s, ok := data["text"].(string)
	if !ok || !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return nil
	}
	return s
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CreateMessage implements chat.MessageStore.
func (t *tx) CreateMessage(ctx context.Context, m *chat.Message) error {
	data, err := jsonText(m.Data)
	if err != nil {
		return err
	}
	tags, err := jsonText(m.Tags)
	if err != nil {
		return err
	}
	hf, err := jsonText(m.Hashflag)
	if err != nil {
		return err
	}
	reactions, err := jsonText(m.Reactions)
	if err != nil {
		return err
	}
	mentions, err := mentionsText(m.MentionedUserIDs)
	if err != nil {
		return err
	}
	if _, err := t.exec(ctx, `INSERT INTO messages (message_id, channel_id, channel_segment, user_id, type,
	data, text, tags, parent_id, is_deleted, created_at, edited_at, updated_at, children_number, flag_count,
	hashflag, reactions, reactions_count, mentioned_user_ids) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		m.MessageID, m.ChannelID, m.ChannelSegment, m.UserID, m.Type, data, messageText(m.Data), tags, nullString(m.ParentID),
		m.IsDeleted, ms(m.CreatedAt), msp(m.EditedAt), ms(m.UpdatedAt), m.ChildrenNumber, m.FlagCount,
		hf, reactions, m.ReactionsCount, mentions); err != nil {
		return asConflict(err, "message", m.MessageID)
	}
	if err := t.insertMentions(ctx, m); err != nil {
		return err
	}
	return t.insertMessageTags(ctx, m.MessageID, m.Tags)
}

// SetChildrenNumber implements chat.MessageStore.
func (t *tx) SetChildrenNumber(ctx context.Context, messageID string, n int) error {
	_, err := t.exec(ctx, "UPDATE messages SET children_number = ? WHERE message_id = ?", n, messageID)
	return err
}

func (t *tx) insertMessageTags(ctx context.Context, id string, tags []string) error {
	for _, tag := range tags {
		if _, err := t.exec(ctx, "INSERT OR IGNORE INTO message_tags (message_id, tag) VALUES (?, ?)", id, tag); err != nil {
			return err
		}
	}
	return nil
}

// GetMessage implements chat.MessageStore.
func (t *tx) GetMessage(ctx context.Context, messageID string) (*chat.Message, error) {
	rows, err := keyed(t, ctx, newMessageRow(1).scan, "SELECT "+messageCols+" FROM messages m WHERE m.message_id = ?", messageID)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, notFound("message", messageID)
	}
	return rows[0], nil
}

// GetMessages implements chat.MessageStore.
func (t *tx) GetMessages(ctx context.Context, ids []string) ([]*chat.Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return keyed(t, ctx, newMessageRow(len(ids)).scan, "SELECT "+messageCols+" FROM messages m WHERE m.message_id IN "+inIDs, jsonIDs(ids))
}

// UpdateMessage implements chat.MessageStore.
func (t *tx) UpdateMessage(ctx context.Context, m *chat.Message) error {
	data, err := jsonText(m.Data)
	if err != nil {
		return err
	}
	tags, err := jsonText(m.Tags)
	if err != nil {
		return err
	}
	hf, err := jsonText(m.Hashflag)
	if err != nil {
		return err
	}
	mentions, err := mentionsText(m.MentionedUserIDs)
	if err != nil {
		return err
	}
	var old []byte
	var oldMentions string
	var was wordsRow
	if err := t.row(ctx, "SELECT tags, rowid, created_at, type, "+wordsDataCols+", is_deleted, mentioned_user_ids FROM messages WHERE message_id = ?", []any{m.MessageID},
		&old, &was.rowid, &was.created, &was.typ, &was.data, &was.text, &was.deleted, &oldMentions); err != nil {
		return asNotFound(err, "message", m.MessageID)
	}
	if _, err := t.exec(ctx, `UPDATE messages SET data = ?, text = ?, tags = ?, is_deleted = ?, edited_at = ?,
	updated_at = ?, flag_count = ?, hashflag = ?, mentioned_user_ids = ? WHERE message_id = ?`,
		data, messageText(m.Data), tags, m.IsDeleted, msp(m.EditedAt), ms(m.UpdatedAt), m.FlagCount, hf, mentions, m.MessageID); err != nil {
		return err
	}
	if oldMentions != mentions {
		if _, err := t.exec(ctx, "DELETE FROM message_mentions WHERE message_id = ?", m.MessageID); err != nil {
			return err
		}
		if err := t.insertMentions(ctx, m); err != nil {
			return err
		}
	}
	if err := t.reindexMessage(ctx, &was, m); err != nil {
		return err
	}
	if string(old) == tags {
		return nil
	}
	if _, err := t.exec(ctx, "DELETE FROM message_tags WHERE message_id = ?", m.MessageID); err != nil {
		return err
	}
	return t.insertMessageTags(ctx, m.MessageID, m.Tags)
}

// quickPage is the largest LIMIT of a page of messages read without
// watching the caller's context (the Service asks for at most 101).
const quickPage = 256

// QueryMessages implements chat.MessageStore.
func (t *tx) QueryMessages(ctx context.Context, f chat.MessageFilter) ([]*chat.Message, error) {
	var q strings.Builder
	var args []any
	row := newMessageRow(f.Limit)
	if f.ChannelID != "" {
		q.WriteString("SELECT " + channelMessageCols + " FROM messages m WHERE ")
		row.ofChannel(f.ChannelID)
	} else {
		q.WriteString("SELECT " + messageCols + " FROM messages m WHERE ")
	}
	switch {
	case f.ParentID != "":
		// Comments: index messages_parent_idx (parent_id, channel_segment).
		q.WriteString("m.parent_id = " + textParam)
		args = append(args, f.ParentID)
		if f.ChannelID != "" {
			q.WriteString(" AND m.channel_id = " + textParam)
			args = append(args, f.ChannelID)
		}
		if f.UserID != "" {
			q.WriteString(" AND m.user_id = " + textParam)
			args = append(args, f.UserID)
		}
	case f.UserID != "":
		// One author in a channel: index messages_author_idx (channel_id,
		// user_id, channel_segment).
		q.WriteString("m.channel_id = " + textParam + " AND m.user_id = " + textParam)
		args = append(args, f.ChannelID, f.UserID)
	default:
		// Pages of a channel: index messages_segment_idx.
		q.WriteString("m.channel_id = " + textParam)
		args = append(args, f.ChannelID)
	}
	if f.TopLevel {
		q.WriteString(" AND m.parent_id IS NULL")
	}
	if !f.IncludeDeleted {
		q.WriteString(" AND m.is_deleted = 0")
	}
	if len(f.Tags) > 0 {
		q.WriteString(" AND EXISTS (SELECT 1 FROM message_tags mt WHERE mt.message_id = m.message_id AND mt.tag IN " + inIDs + ")")
		args = append(args, jsonIDs(f.Tags))
	}
	if len(f.ExcludeTags) > 0 {
		q.WriteString(" AND NOT EXISTS (SELECT 1 FROM message_tags xt WHERE xt.message_id = m.message_id AND xt.tag IN " + inIDs + ")")
		args = append(args, jsonIDs(f.ExcludeTags))
	}
	if f.AfterSegment > 0 {
		q.WriteString(" AND m.channel_segment > ?")
		args = append(args, f.AfterSegment)
	}
	if f.BeforeSegment > 0 {
		q.WriteString(" AND m.channel_segment < ?")
		args = append(args, f.BeforeSegment)
	}
	if f.Descending {
		q.WriteString(" ORDER BY m.channel_segment DESC")
	} else {
		q.WriteString(" ORDER BY m.channel_segment ASC")
	}
	q.WriteString(" LIMIT " + limitParam)
	args = append(args, limitArg(f.Limit))
	if len(f.Tags) == 0 && len(f.ExcludeTags) == 0 && f.Limit > 0 && f.Limit <= quickPage {
		// One index range read in order, stopping after f.Limit rows (the
		// rows skipped as deleted aside): bounded, see quickCtx.
		return rawList(t, ctx, row.scanValues, row.scan, q.String(), args...)
	}
	return list(t, ctx, row.scan, q.String(), args...)
}

func (t *tx) softDelete(ctx context.Context, q string, args ...any) ([]string, error) {
	return list(t, ctx, func(sc scanner) (string, error) {
		var id string
		err := sc.Scan(&id)
		return id, err
	}, q, args...)
}

// SoftDeleteMessages implements chat.MessageStore.
func (t *tx) SoftDeleteMessages(ctx context.Context, channelID, userID string, now time.Time) ([]string, error) {
	n := ms(chat.NewTime(now))
	if userID == "" {
		return t.softDelete(ctx, `UPDATE messages SET is_deleted = 1, data = '{}', text = NULL, updated_at = ?
	WHERE channel_id = ? AND is_deleted = 0 RETURNING message_id`, n, channelID)
	}
	return t.softDelete(ctx, `UPDATE messages SET is_deleted = 1, data = '{}', text = NULL, updated_at = ?
	WHERE user_id = ? AND channel_id = ? AND is_deleted = 0 RETURNING message_id`, n, userID, channelID)
}

// SoftDeleteUserMessages implements chat.MessageStore.
func (t *tx) SoftDeleteUserMessages(ctx context.Context, userID string, now time.Time) ([]string, error) {
	return t.softDelete(ctx, `UPDATE messages SET is_deleted = 1, data = '{}', text = NULL, updated_at = ?
	WHERE user_id = ? AND is_deleted = 0 RETURNING message_id`, ms(chat.NewTime(now)), userID)
}
