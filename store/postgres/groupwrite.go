package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

// Posts of a commit group transaction (group.go) read and write together.
//
// Reads: the Service announces a post's reads (chat.WithPostReads). Before
// a batch of members runs, the posts among them read what their rules
// read in one statement (groupPrefetchSQL, the channels locked in the
// order of their ids), and each post's PrefetchPost is answered from its
// row unless a statement that may have changed those rows ran since
// (epoch). A post writes only its channel's row among those rows (its
// message counter and activity times), and the transaction holds that
// row's lock from its first read on: a post to a channel the transaction
// has posted to is answered with the channel as those posts left it
// (channelAfter, what deferAppend counted or appendSQL returned), so the
// posts to one busy channel read no more than posts to many.
//
// Writes: a post's AppendMessage is deferred after its reads
// (deferAppend), and its EnqueueDeliveries and AppendEvents then run
// neither: the message, its deliveries and its events wait in the group's
// groupPosts, and one statement (groupAppendSQL) writes those of every
// waiting post, in their order, before the next statement that could see
// them: any statement but the reads ahead and the reads of posts to
// channels without a waiting post, which read only those channels' rows,
// their members and the authors. The group's COMMIT comes after. A group
// of posts to one channel or to n channels is thus BEGIN, one or two
// reads, one write and COMMIT. When a read or the write fails, the group
// falls back as for any failed statement: it is rolled back and every
// post runs alone.

// groupPosts are the posts of a group transaction whose writes wait.
type groupPosts struct {
	t       *tx             // the group's own statements
	posts   []*groupPost    // in their order
	keys    map[string]bool // their channels
	err     error           // the writes or the reads ahead failed: the group falls back
	generic bool            // the transaction plans its statements generically (genericPlans)
	// epoch counts the statements of the transaction that may have
	// changed rows read ahead (writes, touchesAhead, not postStatement):
	// rows read in an older epoch are not served.
	epoch int
	// after holds, by channel, the row as the transaction's posts to it
	// left it.
	after map[string]channelAfter
}

// channelAfter is a channel's row after the transaction's last post to
// it, known in epoch.
type channelAfter struct {
	c     *chat.Channel
	epoch int
}

// posted records c, a channel's row after a post of the transaction.
func (g *groupPosts) posted(c *chat.Channel) {
	if g.after == nil {
		g.after = make(map[string]channelAfter)
	}
	g.after[c.ChannelID] = channelAfter{c: copyChannel(c), epoch: g.epoch}
}

// served returns the row to answer a post's reads with, from row, read
// ahead in the current epoch: row itself when the transaction has not
// posted to the channel, else row with the channel as those posts left
// it. ok is false when that is not known (a statement that may have
// changed the channel ran after the last post to it).
func (g *groupPosts) served(channelID string, row *prefetchRow) (out *prefetchRow, ok bool) {
	a, posted := g.after[channelID]
	switch {
	case !posted:
		return row, true
	case a.epoch != g.epoch || row.p.channel == nil:
		return nil, false
	}
	r := *row
	r.p.channel, r.p.locked = copyChannel(a.c), copyChannel(a.c)
	return &r, true
}

// readAhead are the rows of a post read with other posts' before its
// function ran (readAhead).
type readAhead struct {
	channelID, userID string
	row               *prefetchRow
	epoch             int
}

// groupPrefetchSQL is prefetchUpdateSQL for posts to channels ($1, one
// channel may come several times) by authors ($2), a row for each in their
// order: the channels are locked in the order of their ids, then the
// authors' relations to them.
var groupPrefetchSQL = `WITH x AS MATERIALIZED (
		SELECT * FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(c, u, ord)
	), c AS MATERIALIZED (
		SELECT ` + channelCols + ` FROM {s}channels WHERE channel_id = ANY ($1::text[])
		ORDER BY channel_id` + lockClause + `
	), m AS MATERIALIZED (
		SELECT ` + channelUserSel + ` FROM {s}channel_users
		WHERE (channel_id, user_id) IN (SELECT x.c, x.u FROM x) AND channel_id IN (SELECT c.channel_id FROM c)
		ORDER BY channel_id, user_id` + lockClause + `
	)
	SELECT c.*, m.*, u.*,
		(SELECT value FROM {s}versions WHERE name = 'rules'),
		(SELECT value FROM {s}versions WHERE name = 'webhooks'),
		` + strings.NewReplacer("$1", "x.c", "$2", "x.u").Replace(pushTargetsJSON) + `,
		(SELECT json_agg(json_build_array(r.role_id, r.permissions,
			floor(extract(epoch FROM r.created_at) * 1000)::bigint,
			floor(extract(epoch FROM r.updated_at) * 1000)::bigint))
			FROM {s}roles r WHERE r.role_id = ANY (u.roles))
	FROM x
		LEFT JOIN c ON c.channel_id = x.c
		LEFT JOIN m ON m.channel_id = x.c AND m.user_id = x.u
		LEFT JOIN LATERAL (SELECT ` + userReadCols + ` FROM {s}users WHERE user_id = x.u) u ON true
	ORDER BY x.ord`

// postStatement reports whether tmpl is one of a post's reads or writes,
// which read or change only the rows of the post's own channel (and
// insert rows of other tables): they leave the rows read ahead for posts
// to other channels valid.
func postStatement(tmpl string) bool {
	switch tmpl {
	case prefetchUpdateSQL, groupPrefetchSQL, appendSQL, appendWithEventsSQL, appendWithDeliveriesSQL, groupAppendSQL,
		groupAppendWithDeliveriesSQL:
		return true
	}
	return false
}

// touchesAhead reports whether a statement template names a table that
// rows read ahead come from.
func touchesAhead(tmpl string) bool {
	return touchesPrefetched(tmpl) || touchesTargets(tmpl) || strings.Contains(tmpl, "{s}versions") ||
		strings.Contains(tmpl, "{s}roles")
}

// readAhead reads, in one statement, the rows of the posts of batch (runs
// about to run, in the order of their keys) that announced their reads
// (chat.WithPostReads), up to the first run that did not: no lock is taken
// out of the order of the keys. A post alone is left to read its own
// unless a post to its channel waits for its write (its own read would
// write that first).
func (g *groupPosts) readAhead(ctx context.Context, batch []*groupRun) {
	var runs []*groupRun
	var chans, users []string
	for _, r := range batch {
		if r.m.ctx.Err() != nil {
			continue // runs nothing
		}
		c, u, ok := chat.PostReads(r.m.ctx)
		if !ok || c != r.m.key {
			break
		}
		runs, chans, users = append(runs, r), append(chans, c), append(users, u)
	}
	if len(runs) == 0 || len(runs) == 1 && !g.keys[chans[0]] {
		return
	}
	rows := make([]*prefetchRow, 0, len(runs))
	if err := g.genericPlans(ctx); err != nil {
		g.err = err
		return
	}
	err := g.t.query(ctx, groupPrefetchSQL, []any{textArray(chans), textArray(users)}, func(r *sql.Rows) error {
		row, err := g.t.scanPrefetch(r)
		rows = append(rows, row)
		return err
	})
	if err == nil && len(rows) != len(runs) {
		err = fmt.Errorf("postgres: %d rows read ahead for %d posts", len(rows), len(runs))
	}
	if err != nil {
		if g.err == nil {
			g.err = err
		}
		return
	}
	for i, r := range runs {
		g.t.lockedChannel(chans[i])
		r.ahead = &readAhead{channelID: chans[i], userID: users[i], row: rows[i], epoch: g.epoch}
	}
}

// groupPost is one waiting post.
type groupPost struct {
	t    *tx
	pend *pendingAppend
	del  *pendingDeliveries // nil: none
	ev   *eventRows
}

// groupPostRow is a waiting post's message as a row of groupAppendSQL's
// $1, with the values appendSQL's parameters would carry.
type groupPostRow struct {
	I              int             `json:"i"`
	ChannelID      string          `json:"channel_id"`
	At             time.Time       `json:"at"`
	MessageID      string          `json:"message_id"`
	UserID         string          `json:"user_id"`
	Type           string          `json:"type"`
	Data           json.RawMessage `json:"data"`
	Tags           []string        `json:"tags"`
	ParentID       *string         `json:"parent_id"`
	IsDeleted      bool            `json:"is_deleted"`
	CreatedAt      time.Time       `json:"created_at"`
	EditedAt       *time.Time      `json:"edited_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	ChildrenNumber int             `json:"children_number"`
	FlagCount      int             `json:"flag_count"`
	Hashflag       json.RawMessage `json:"hashflag"`
	Reactions      json.RawMessage `json:"reactions"`
	ReactionsCount int             `json:"reactions_count"`
	Words          []string        `json:"words"`
	Mentioned      []string        `json:"mentioned"`
}

// postRow returns m's row for groupAppendSQL; args are its appendSQL
// parameters, whose encoded data and words it reuses.
func postRow(m *chat.Message, now time.Time, args []any) *groupPostRow {
	r := &groupPostRow{
		ChannelID: m.ChannelID, At: now.UTC().Truncate(time.Millisecond), MessageID: m.MessageID,
		UserID: m.UserID, Type: string(m.Type), Tags: emptyIfNil(m.Tags), IsDeleted: m.IsDeleted,
		CreatedAt: timeArg(m.CreatedAt), UpdatedAt: timeArg(m.UpdatedAt), ChildrenNumber: m.ChildrenNumber,
		FlagCount: m.FlagCount, ReactionsCount: m.ReactionsCount, Mentioned: emptyIfNil(m.MentionedUserIDs),
	}
	if d, ok := args[5].(string); ok {
		r.Data = json.RawMessage(d)
	}
	if m.ParentID != "" {
		r.ParentID = &m.ParentID
	}
	if m.EditedAt != nil {
		e := timeArg(*m.EditedAt)
		r.EditedAt = &e
	}
	if h, ok := hashflagArg(m.Hashflag).(string); ok {
		r.Hashflag = json.RawMessage(h)
	}
	if c, ok := countsArg(m.Reactions).(string); ok {
		r.Reactions = json.RawMessage(c)
	}
	if w, ok := args[17].(pq.StringArray); ok {
		r.Words = w
	}
	return r
}

func emptyIfNil(a []string) []string {
	if a == nil {
		return []string{}
	}
	return a
}

// groupAppendSQL writes the messages of posts ($1, a JSON array of
// groupPostRow, in their order; one channel may come several times) as
// appendWithEventsSQL writes one each, and their events ($2-$6, as
// appendEventsSQL's, every post's in turn). It returns each event's key,
// the log's last id and the count of message rows inserted.
var groupAppendSQL = groupAppendCTEs + eventsTailSQL("$2")

// groupAppendWithDeliveriesSQL is groupAppendSQL with the posts'
// deliveries ($2-$14, as enqueueSQL's, every post's in turn) between the
// messages and the events ($15-$19). It returns, after groupAppendSQL's
// columns, the deliveries inserted and the pending ones among them.
var groupAppendWithDeliveriesSQL = withDeliveries(groupAppendCTEs, 1)

// groupAppendCTEs are the message writes of groupAppendSQL ($1). A
// channel's counter grows by its posts (n.k, the last one's rank k), each
// post's segment is the counter before them plus its rank, and the
// activity times are the last post's, as appendSQL run post after post
// leaves them.
const groupAppendCTEs = `WITH x AS MATERIALIZED (
		SELECT x.*, count(*) OVER (PARTITION BY x.channel_id ORDER BY x.i) AS k
		FROM json_to_recordset($1::json) AS x(i integer, channel_id text, at timestamptz,
			message_id text, user_id text, type text, data json, tags text[], parent_id text,
			is_deleted boolean, created_at timestamptz, edited_at timestamptz, updated_at timestamptz,
			children_number integer, flag_count integer, hashflag json, reactions jsonb,
			reactions_count integer, words text[], mentioned text[])
	), n AS (
		SELECT DISTINCT ON (channel_id) channel_id, at, k FROM x ORDER BY channel_id, i DESC
	), c AS (
		UPDATE {s}channels ch
		SET message_count = ch.message_count + n.k, last_activity = n.at, updated_at = n.at
		FROM n WHERE ch.channel_id = n.channel_id
		RETURNING ch.channel_id, ch.message_count - n.k AS before, ch.is_closed
	), ins AS (
		INSERT INTO {s}messages (` + messageCols + `, search)
		SELECT x.message_id, c.channel_id, x.user_id, x.type, x.data, x.tags, x.parent_id,
			x.is_deleted, x.created_at, x.edited_at, x.updated_at, c.before + x.k,
			x.children_number, x.flag_count, x.hashflag, x.reactions, x.reactions_count, x.mentioned,
			array_to_tsvector(x.words)
		FROM x JOIN c ON c.channel_id = x.channel_id WHERE NOT c.is_closed
		ORDER BY x.i
		RETURNING 1
	)`

// add makes t's post wait with its deferred message, its deliveries
// (del, or nil) and its events.
func (g *groupPosts) add(t *tx, pend *pendingAppend, del *pendingDeliveries, ev *eventRows) {
	g.posts = append(g.posts, &groupPost{t: t, pend: pend, del: del, ev: ev})
	g.keys[pend.channelID] = true
}

// flushBefore writes the waiting posts before t runs the statement tmpl
// with args, unless that statement cannot see them.
func (t *tx) flushBefore(ctx context.Context, tmpl string, args []any) error {
	g := t.grp
	if g == nil || len(g.posts) == 0 {
		return nil
	}
	switch tmpl {
	case prefetchUpdateSQL:
		if c, ok := args[0].(string); ok && !g.keys[c] {
			return nil
		}
	case groupPrefetchSQL:
		return nil // reads channels the transaction has not run (readAhead)
	}
	return g.flush(ctx)
}

// flush writes the waiting posts: a post alone with appendWithEventsSQL,
// as outside a group, several with groupAppendSQL.
func (g *groupPosts) flush(ctx context.Context) error {
	posts := g.posts
	g.posts = nil
	clear(g.keys)
	var err error
	switch len(posts) {
	case 0:
		return g.err
	case 1:
		p := posts[0]
		p.t.pend, p.t.pendDel = p.pend, p.del
		err = p.t.writeEvents(ctx, p.ev)
	default:
		err = g.write(ctx, posts)
	}
	if err != nil && g.err == nil {
		g.err = err
	}
	return err
}

// write runs groupAppendSQL (groupAppendWithDeliveriesSQL when a post
// has deliveries) for posts, and gives each its events' keys.
func (g *groupPosts) write(ctx context.Context, posts []*groupPost) error {
	rows := make([]*groupPostRow, len(posts))
	var names, chans, users, createds []string
	var data pq.ByteaArray
	var dels []any // enqueueSQL's column arrays, every post's in turn
	ndel, npending := 0, 0
	for i, p := range posts {
		rows[i] = p.pend.row
		rows[i].I = i
		names = append(names, p.ev.names...)
		chans = append(chans, p.ev.chans...)
		users = append(users, p.ev.users...)
		createds = append(createds, p.ev.createds...)
		data = append(data, p.ev.data...)
		if p.del != nil {
			var err error
			if dels, err = appendColumns(dels, p.del.args); err != nil {
				return err
			}
			ndel += p.del.n
			npending += p.del.pending()
		}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	if err := g.genericPlans(ctx); err != nil {
		return err
	}
	tmpl, args := groupAppendSQL, []any{string(b)}
	if dels != nil {
		tmpl, args = groupAppendWithDeliveriesSQL, append(args, dels...)
	}
	args = append(args, textArray(names), textArray(chans), textArray(users), data, textArray(createds))
	seqs := make([]int64, 0, len(names))
	var floor, inserted, dlInserted, dlPending int64
	err = g.t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		var seq int64
		dest := []any{&seq, &floor, &inserted}
		if dels != nil {
			dest = append(dest, &dlInserted, &dlPending)
		}
		if err := r.Scan(dest...); err != nil {
			return err
		}
		seqs = append(seqs, seq)
		return nil
	})
	switch {
	case err != nil:
		return err
	case inserted != int64(len(posts)):
		return fmt.Errorf("postgres: %d of %d messages of a commit group inserted", inserted, len(posts))
	case len(seqs) != len(names):
		return fmt.Errorf("postgres: %d of %d events of a commit group inserted", len(seqs), len(names))
	case dlInserted != int64(ndel):
		return chat.Errorf(chat.CodeConflict, "a delivery among %d already exists", ndel)
	case dlPending != int64(npending):
		return fmt.Errorf("postgres: %d of %d deliveries of a commit group pending", dlPending, npending)
	}
	// As in writeEvents: keys in insertion order, every post's events in
	// turn.
	slices.Sort(seqs)
	for _, p := range posts {
		n := len(p.ev.es)
		p.t.noteAppended(p.ev.es, seqs[:n], floor)
		seqs = seqs[n:]
		if p.del != nil {
			// Every delivery was inserted, as it was enqueued.
			if err := p.t.noteEnqueued(p.del.n, p.del.n, p.del.pending()); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendColumns appends the column arrays src (enqueueSQL's arguments) to
// those of dst, which may be nil.
func appendColumns(dst, src []any) ([]any, error) {
	if dst == nil {
		dst = make([]any, len(src))
	}
	for i, v := range src {
		switch v := v.(type) {
		case pq.StringArray:
			d, _ := dst[i].(pq.StringArray)
			dst[i] = append(d, v...)
		case pq.ByteaArray:
			d, _ := dst[i].(pq.ByteaArray)
			dst[i] = append(d, v...)
		case pq.Int64Array:
			d, _ := dst[i].(pq.Int64Array)
			dst[i] = append(d, v...)
		default:
			return nil, fmt.Errorf("postgres: a delivery column of type %T", v)
		}
	}
	return dst, nil
}

// pending returns how many of the deliveries are enqueued pending and
// without a lease, due for a claim (enqueueSQL's $5 and $8, their states
// and lease owners), as enqueueSQL counts them.
func (d *pendingDeliveries) pending() int {
	states, _ := d.args[4].(pq.StringArray)
	owners, _ := d.args[7].(pq.StringArray)
	n := 0
	for i, s := range states {
		if s == chat.DeliveryPending && (i >= len(owners) || owners[i] == "") {
			n++
		}
	}
	return n
}

// genericPlans makes the rest of the transaction run its prepared
// statements with their generic plans, once: the group's statements take
// arrays whose lengths change from one group to the next, and with
// plan_cache_mode auto Postgres would plan each run of them anew (a fifth
// of a group's server time). Every statement of a group is a lookup by
// key, which a generic plan serves as well.
func (g *groupPosts) genericPlans(ctx context.Context) error {
	if g.generic {
		return nil
	}
	g.generic = true
	_, err := g.t.tx.ExecContext(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`)
	return g.t.fail(err)
}
