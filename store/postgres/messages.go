package postgres

import (
	"context"
	"database/sql"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

const messageCols = `message_id, channel_id, user_id, type, data, tags, parent_id,
	is_deleted, created_at, edited_at, updated_at, channel_segment, children_number, flag_count,
	hashflag, reactions, reactions_count, mentioned_user_ids`

func scanMessage(r scanner) (*chat.Message, error) {
	var (
		m                   chat.Message
		data, hf, reactions []byte
		tags, mentions      pq.StringArray
		parent              sql.NullString
		created, updated    time.Time
		edited              sql.NullTime
	)
	if err := r.Scan(&m.MessageID, &m.ChannelID, &m.UserID, &m.Type, &data, &tags, &parent,
		&m.IsDeleted, &created, &edited, &updated, &m.ChannelSegment, &m.ChildrenNumber, &m.FlagCount,
		&hf, &reactions, &m.ReactionsCount, &mentions); err != nil {
		return nil, err
	}
	var err error
	if m.Data, err = jsonMap(data); err != nil {
		return nil, err
	}
	if m.Hashflag, err = scanHashflag(hf); err != nil {
		return nil, err
	}
	if m.Reactions, err = scanCounts(reactions); err != nil {
		return nil, err
	}
	m.Tags = tagsOut(tags)
	if len(mentions) > 0 {
		m.MentionedUserIDs = []string(mentions)
	}
	m.ParentID = parent.String
	m.CreatedAt, m.UpdatedAt = ct(created), ct(updated)
	m.EditedAt = ctp(edited)
	return &m, nil
}

func (t *tx) messages(ctx context.Context, tmpl string, args ...any) ([]*chat.Message, error) {
	var out []*chat.Message
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		m, err := scanMessage(r)
		if err == nil {
			out = append(out, m)
		}
		return err
	})
	return out, err
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CreateMessage inserts the message. ON CONFLICT DO NOTHING reports a
// duplicate id or segment as CodeConflict without aborting the transaction.
func (t *tx) CreateMessage(ctx context.Context, m *chat.Message) error {
	data, err := jsonArg(m.Data)
	if err != nil {
		return err
	}
	n, err := t.exec(ctx, `INSERT INTO {s}messages (`+messageCols+`, search)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $19, array_to_tsvector($18::text[]))
		ON CONFLICT DO NOTHING`,
		m.MessageID, m.ChannelID, m.UserID, m.Type, data, tagsArg(m.Tags), nullString(m.ParentID),
		m.IsDeleted, timeArg(m.CreatedAt), timePtrArg(m.EditedAt), timeArg(m.UpdatedAt), m.ChannelSegment,
		m.ChildrenNumber, m.FlagCount, hashflagArg(m.Hashflag), countsArg(m.Reactions), m.ReactionsCount,
		searchArg(m), tagsArg(m.MentionedUserIDs))
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeConflict, "message %q or segment %d of channel %q already exists",
			m.MessageID, m.ChannelSegment, m.ChannelID)
	}
	return t.insertMentions(ctx, m)
}

// SetChildrenNumber implements chat.MessageStore. Written to the parent of
// a deferred AppendMessage, it joins that statement (appendCTEs' parent,
// $20), so a comment costs no round trip more.
func (t *tx) SetChildrenNumber(ctx context.Context, messageID string, n int) error {
	if p := t.pend; p != nil && p.parentID == messageID && messageID != "" {
		p.args[19] = n
		return nil
	}
	_, err := t.exec(ctx, `UPDATE {s}messages SET children_number = $2 WHERE message_id = $1`, messageID, n)
	return err
}

// appendSQL is AppendMessage in one statement: the channel row's increment
// (as NextSegment), the message row with the new segment unless the channel
// is closed (as CreateMessage), and, when $20 is not null, the parent's
// childrenNumber given by SetChildrenNumber.
const appendSQL = appendCTEs + `
	SELECT ` + channelCols + `, (SELECT count(*) FROM ins) FROM c`

// appendCTEs are the writes of appendSQL, parameters $1-$20.
const appendCTEs = `WITH c AS (
		UPDATE {s}channels
		SET message_count = message_count + 1, last_activity = $2, updated_at = $2
		WHERE channel_id = $1 RETURNING ` + channelCols + `
	), ins AS (
		INSERT INTO {s}messages (` + messageCols + `, search)
		SELECT $3::text, c.channel_id, $4::text, $5::text, $6::json, $7::text[], $8::text,
			$9::boolean, $10::timestamptz, $11::timestamptz, $12::timestamptz, c.message_count,
			$13::integer, $14::integer, $15::json, $16::jsonb, $17::integer, $19::text[], array_to_tsvector($18::text[])
		FROM c WHERE NOT c.is_closed
		ON CONFLICT DO NOTHING RETURNING parent_id
	), parent AS (
		UPDATE {s}messages p SET children_number = $20::integer
		FROM ins WHERE $20::integer IS NOT NULL AND p.message_id = ins.parent_id
	)`

// appendDeferredCTEs are appendCTEs with a plain INSERT, for
// appendWithEventsSQL.
var appendDeferredCTEs = strings.Replace(appendCTEs, "ON CONFLICT DO NOTHING RETURNING parent_id", "RETURNING parent_id", 1)

// extraScan scans a row's trailing columns into extra after the ones the
// wrapped scan asks for.
type extraScan struct {
	r     scanner
	extra []any
}

func (e extraScan) Scan(dest ...any) error { return e.r.Scan(append(dest, e.extra...)...) }

// AppendMessage implements chat.MessageAppender in one statement, so a
// message costs one round trip between BEGIN and COMMIT. The channel row's
// UPDATE takes its row lock, which orders posters to one channel in every
// process (see NextSegment). After PrefetchPost locked the channel, while
// its rows are valid, the statement is deferred (see deferAppend).
func (t *tx) AppendMessage(ctx context.Context, m *chat.Message, now time.Time) (*chat.Channel, error) {
	data, err := jsonArg(m.Data)
	if err != nil {
		return nil, err
	}
	args := []any{
		m.ChannelID, now.UTC().Truncate(time.Millisecond),
		m.MessageID, m.UserID, m.Type, data, tagsArg(m.Tags), nullString(m.ParentID),
		m.IsDeleted, timeArg(m.CreatedAt), timePtrArg(m.EditedAt), timeArg(m.UpdatedAt),
		m.ChildrenNumber, m.FlagCount, hashflagArg(m.Hashflag), countsArg(m.Reactions), m.ReactionsCount,
		searchArg(m), tagsArg(m.MentionedUserIDs), nil,
	}
	// A message that mentions users runs now: its mention rows follow it
	// (insertMentions reads the stored row).
	if len(m.MentionedUserIDs) == 0 {
		if c := t.deferAppend(m, now, args); c != nil {
			return c, nil
		}
	}
	c, err := t.appendNow(ctx, m.MessageID, m.ChannelID, args)
	if err != nil || c.IsClosed {
		return c, err
	}
	return c, t.insertMentions(ctx, m)
}

// appendNow runs appendSQL.
func (t *tx) appendNow(ctx context.Context, messageID, channelID string, args []any) (*chat.Channel, error) {
	var (
		c *chat.Channel
		n int64
	)
	err := t.query(ctx, appendSQL, args, func(r *sql.Rows) error {
		var err error
		c, err = scanChannel(extraScan{r, []any{&n}})
		return err
	})
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, chat.Errorf(chat.CodeNotFound, "channel %q not found", channelID)
	}
	t.lockedChannel(channelID)
	if t.grp != nil {
		t.grp.posted(c)
	}
	if c.IsClosed {
		return c, nil
	}
	if n == 0 {
		return nil, appendConflict(messageID, c.MessageCount, channelID)
	}
	return c, nil
}

func appendConflict(messageID string, segment int64, channelID string) error {
	return chat.Errorf(chat.CodeConflict, "message %q or segment %d of channel %q already exists",
		messageID, segment, channelID)
}

// GetMessage reads the row without a lock.
func (t *tx) GetMessage(ctx context.Context, messageID string) (*chat.Message, error) {
	return t.message(ctx, `SELECT `+messageCols+` FROM {s}messages WHERE message_id = $1`, messageID)
}

// LockMessage implements chat.LockStore: in an Update the row is held
// (FOR NO KEY UPDATE) until the transaction ends.
func (t *tx) LockMessage(ctx context.Context, messageID string) (*chat.Message, error) {
	return t.message(ctx, `SELECT `+messageCols+` FROM {s}messages WHERE message_id = $1`+t.lockRows(), messageID)
}

func (t *tx) message(ctx context.Context, tmpl, messageID string) (*chat.Message, error) {
	ms, err := t.messages(ctx, tmpl, messageID)
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "message %q not found", messageID)
	}
	return ms[0], nil
}

func (t *tx) GetMessages(ctx context.Context, ids []string) ([]*chat.Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ms, err := t.messages(ctx, `SELECT `+messageCols+` FROM {s}messages WHERE message_id = ANY($1::text[])
		ORDER BY message_id`, textArray(ids))
	if err != nil {
		return nil, err
	}
	return inIDOrder(ids, ms, func(m *chat.Message) string { return m.MessageID }, nil), nil
}

// UpdateMessage replaces the mutable fields; the counters (children,
// reactions) are left as they are.
func (t *tx) UpdateMessage(ctx context.Context, m *chat.Message) error {
	data, err := jsonArg(m.Data)
	if err != nil {
		return err
	}
	// The mention rows follow the new list: those of users it no longer
	// names go, new ones come (a message without mentions costs one
	// index probe).
	var n int64
	err = t.queryRow(ctx, `WITH up AS (
			UPDATE {s}messages SET data = $2, tags = $3, is_deleted = $4,
			edited_at = $5, updated_at = $6, flag_count = $7, hashflag = $8, search = array_to_tsvector($9::text[]),
			mentioned_user_ids = $10
			WHERE message_id = $1
			RETURNING message_id, channel_id, channel_segment, created_at, mentioned_user_ids
		), del AS (
			DELETE FROM {s}message_mentions mm USING up
			WHERE mm.message_id = up.message_id AND NOT (mm.user_id = ANY (up.mentioned_user_ids))
		), ins AS (
			INSERT INTO {s}message_mentions (user_id, message_id, channel_id, channel_segment, created_at)
			SELECT u, up.message_id, up.channel_id, up.channel_segment, up.created_at FROM up, unnest(up.mentioned_user_ids) u
			ON CONFLICT DO NOTHING
		)
		SELECT count(*) FROM up`, []any{
		m.MessageID, data, tagsArg(m.Tags), m.IsDeleted, timePtrArg(m.EditedAt),
		timeArg(m.UpdatedAt), m.FlagCount, hashflagArg(m.Hashflag), searchArg(m), tagsArg(m.MentionedUserIDs)}, &n)
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "message %q not found", m.MessageID)
	}
	return nil
}

// QueryMessages reads one channel's messages by the unique (channel_id,
// channel_segment) index (a comment page by (parent_id, channel_segment)),
// walking forwards or backwards from the bound and stopping at the limit.
func (t *tx) QueryMessages(ctx context.Context, f chat.MessageFilter) ([]*chat.Message, error) {
	q, args := messageQuery(f)
	return t.messages(ctx, q, args...)
}

// messageQuery builds the SQL template and arguments of QueryMessages.
func messageQuery(f chat.MessageFilter) (string, []any) {
	var (
		args  argList
		where []string
	)
	if f.ChannelID != "" {
		where = append(where, "channel_id = "+args.add(f.ChannelID))
	}
	if f.UserID != "" {
		where = append(where, "user_id = "+args.add(f.UserID))
	}
	if f.ParentID != "" {
		where = append(where, "parent_id = "+args.add(f.ParentID))
	} else if f.TopLevel {
		where = append(where, "parent_id IS NULL")
	}
	if !f.IncludeDeleted {
		where = append(where, "NOT is_deleted")
	}
	if f.AfterSegment > 0 {
		where = append(where, "channel_segment > "+args.add(f.AfterSegment))
	}
	if f.BeforeSegment > 0 {
		where = append(where, "channel_segment < "+args.add(f.BeforeSegment))
	}
	if len(f.Tags) > 0 {
		where = append(where, "tags && "+args.add(textArray(f.Tags))+"::text[]")
	}
	if len(f.ExcludeTags) > 0 {
		where = append(where, "NOT (tags && "+args.add(textArray(f.ExcludeTags))+"::text[])")
	}
	q := "SELECT " + messageCols + " FROM {s}messages"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	// Ordering by channel_id too lets the planner walk the unique index
	// (channel_id, channel_segment) whichever way the page goes.
	// With an author, the index (channel_id, user_id, channel_segment).
	switch {
	case f.UserID != "" && f.ParentID == "" && f.Descending:
		q += " ORDER BY channel_id DESC, user_id DESC, channel_segment DESC"
	case f.UserID != "" && f.ParentID == "":
		q += " ORDER BY channel_id, user_id, channel_segment"
	case f.Descending:
		q += " ORDER BY channel_id DESC, channel_segment DESC"
	default:
		q += " ORDER BY channel_id, channel_segment"
	}
	q += limitOffset(&args, f.Limit, 0)
	return q, args
}

func (t *tx) SoftDeleteMessages(ctx context.Context, channelID, userID string, now time.Time) ([]string, error) {
	if userID == "" {
		return t.softDeleted(ctx, `WITH u AS (
				UPDATE {s}messages SET is_deleted = true, data = '{}', updated_at = $2
				WHERE channel_id = $1 AND NOT is_deleted RETURNING message_id, channel_segment
			) SELECT message_id FROM u ORDER BY channel_segment`, channelID, timeArg(chat.NewTime(now)))
	}
	return t.softDeleted(ctx, `WITH u AS (
			UPDATE {s}messages SET is_deleted = true, data = '{}', updated_at = $3
			WHERE user_id = $2 AND channel_id = $1 AND NOT is_deleted RETURNING message_id, channel_segment
		) SELECT message_id FROM u ORDER BY channel_segment`, channelID, userID, timeArg(chat.NewTime(now)))
}

func (t *tx) SoftDeleteUserMessages(ctx context.Context, userID string, now time.Time) ([]string, error) {
	return t.softDeleted(ctx, `WITH u AS (
			UPDATE {s}messages SET is_deleted = true, data = '{}', updated_at = $2
			WHERE user_id = $1 AND NOT is_deleted RETURNING message_id, channel_id, channel_segment
		) SELECT message_id FROM u ORDER BY channel_id, channel_segment`, userID, timeArg(chat.NewTime(now)))
}

// softDeleted runs a soft delete returning message ids.
func (t *tx) softDeleted(ctx context.Context, tmpl string, args ...any) ([]string, error) {
	var out []string
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		var id string
		err := r.Scan(&id)
		out = append(out, id)
		return err
	})
	return out, err
}
