package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

// prefetched holds rows that PrefetchPost read in one statement, for the
// reads of the same transaction that follow it. They are served only until
// a statement of this transaction names the channels, channel_users or
// users table (touchesPrefetched): in an Update the prefetch locked the
// channel and channel-user rows, so only this transaction can change them,
// and it has not; the user was read without a lock, as GetUser reads it.
// Each is served once, so callers never share a value.
type prefetched struct {
	channelID string
	userID    string

	channel   *chat.Channel // nil: no such channel
	locked    *chat.Channel // a copy of channel for deferAppend, in an Update
	hasChan   bool
	cu        *chat.ChannelUser // nil: no relation
	hasCU     bool
	user      *chat.User // nil: no such user
	hasUser   bool
	userFresh bool // read the way GetUser would (not a user to lock)
}

// versions holds the counters of the versions table read by PrefetchPost,
// served by RulesVersion and WebhooksVersion until a statement of this
// transaction that names the versions table runs (a rule or webhook
// write bumps them).
type versions struct {
	rules, webhooks int64
}

// column counts of the blocks of prefetchSQL
var (
	nChannelCols = strings.Count(channelCols, ",") + 1
	nCUCols      = strings.Count(channelUserSel, ",") + 1
	nUserCols    = strings.Count(userReadCols, ",") + 1
)

// prefetchSQL reads what the rules of a post read, in one row: the
// channel (locked in an Update), the author's relation to it (locked after
// the channel, the order every transaction takes them in), the author
// (unlocked, as GetUser reads it) and the rules and webhooks versions, and
// the author's roles (read as GetRoles reads them: the permissions of an
// author with roles are read by every post).
// {lock} becomes " FOR NO KEY UPDATE" in an Update and "" in a View;
// {targets} becomes, in an Update, the push targets of the channel for a
// message by the author (pushTargetsJSON), and NULL in a View. A missing
// row leaves its block NULL.
const prefetchSQL = `WITH c AS MATERIALIZED (
		SELECT ` + channelCols + ` FROM {s}channels WHERE channel_id = $1{lock}
	), m AS MATERIALIZED (
		SELECT ` + channelUserSel + ` FROM {s}channel_users
		WHERE channel_id = $1 AND user_id = $2 AND EXISTS (SELECT FROM c){lock}
	)
	SELECT c.*, m.*, u.*,
		(SELECT value FROM {s}versions WHERE name = 'rules'),
		(SELECT value FROM {s}versions WHERE name = 'webhooks'),
		{targets},
		(SELECT json_agg(json_build_array(r.role_id, r.permissions,
			floor(extract(epoch FROM r.created_at) * 1000)::bigint,
			floor(extract(epoch FROM r.updated_at) * 1000)::bigint))
			FROM {s}roles r WHERE r.role_id = ANY (u.roles))
	FROM (VALUES (1)) AS one(x)
		LEFT JOIN c ON true
		LEFT JOIN m ON true
		LEFT JOIN (SELECT ` + userReadCols + ` FROM {s}users WHERE user_id = $2) u ON true`

// prefetchUpdateSQL and prefetchViewSQL are prefetchSQL in an Update and
// in a View.
var (
	prefetchUpdateSQL = strings.NewReplacer("{lock}", lockClause, "{targets}", pushTargetsJSON).Replace(prefetchSQL)
	prefetchViewSQL   = strings.NewReplacer("{lock}", "", "{targets}", "NULL::json").Replace(prefetchSQL)
)

// nPrefetchCols is the number of columns of prefetchSQL's row.
var nPrefetchCols = nChannelCols + nCUCols + nUserCols + 4

// PrefetchPost implements chat.PostPrefetcher: one statement reads the
// channel, the author's relation to it, the author and the versions, and
// the GetChannel, GetChannelUser, GetUser, RulesVersion and
// WebhooksVersion calls that follow are answered from it.
func (t *tx) PrefetchPost(ctx context.Context, channelID, userID string) error {
	if a := t.ahead; a != nil {
		t.ahead = nil
		// Served unless a statement may have changed the rows since,
		// with the channel as the transaction's posts to it left it
		// (groupwrite.go).
		if a.channelID == channelID && a.userID == userID && a.epoch == t.grp.epoch {
			if row, ok := t.grp.served(channelID, a.row); ok {
				t.installPrefetch(channelID, userID, row)
				return nil
			}
		}
	}
	tmpl := prefetchViewSQL
	if t.write {
		tmpl = prefetchUpdateSQL
	}
	var row *prefetchRow
	err := t.query(ctx, tmpl, []any{channelID, userID}, func(r *sql.Rows) error {
		var err error
		row, err = t.scanPrefetch(r)
		return err
	})
	if err != nil {
		return err
	}
	t.installPrefetch(channelID, userID, row)
	return nil
}

// prefetchRow is a row of prefetchSQL, scanned.
type prefetchRow struct {
	p     prefetched
	v     *versions
	pt    []*chat.PushTarget
	roles []*chat.Role
}

// scanPrefetch scans a row of prefetchSQL (or groupPrefetchSQL).
func (t *tx) scanPrefetch(r *sql.Rows) (*prefetchRow, error) {
	var out prefetchRow
	p := &out.p
	n := nPrefetchCols
	// One buffer of destinations for every scan of the row: the
	// columns a scan does not ask for are skipped (skipColumn).
	w := window{r: r, all: make([]any, n)}
	// The first pass reads which blocks are there (a missing row
	// leaves its block NULL) and the last four columns.
	var hasChan, hasCU, hasUser notNull
	var rv, wv sql.NullInt64
	var tj, rj []byte
	for i := range w.all {
		w.all[i] = skipColumn{}
	}
	w.all[0], w.all[nChannelCols], w.all[nChannelCols+nCUCols] = &hasChan, &hasCU, &hasUser
	w.all[n-4], w.all[n-3], w.all[n-2], w.all[n-1] = &rv, &wv, &tj, &rj
	if err := r.Scan(w.all...); err != nil {
		return nil, err
	}
	var err error
	if hasChan {
		if p.channel, err = scanChannel(w.at(0)); err != nil {
			return nil, err
		}
		if t.write {
			if p.locked, err = scanChannel(w.at(0)); err != nil {
				return nil, err
			}
		}
	}
	if hasCU {
		if p.cu, err = scanChannelUser(w.at(nChannelCols)); err != nil {
			return nil, err
		}
	}
	if hasUser {
		if p.user, err = scanUser(w.at(nChannelCols + nCUCols)); err != nil {
			return nil, err
		}
	}
	if p.user != nil {
		if out.roles, err = decodeRoles(rj); err != nil {
			return nil, err
		}
	}
	if t.write {
		if out.pt, err = decodePushTargets(tj); err != nil {
			return nil, err
		}
	}
	if rv.Valid && wv.Valid {
		out.v = &versions{rules: rv.Int64, webhooks: wv.Int64}
	}
	return &out, nil
}

// installPrefetch makes the rows read for a post of userID to channelID
// answer the reads that follow (see prefetched). row is nil when the
// statement returned no row.
func (t *tx) installPrefetch(channelID, userID string, row *prefetchRow) {
	if row == nil {
		row = &prefetchRow{}
	}
	p := row.p
	// Marked held even when the channel does not exist, as lockChannel
	// does: a row that is missing stays missing for the transaction.
	t.lockedChannel(channelID)
	p.channelID, p.userID = channelID, userID
	// A relation found missing is not served: the statement's snapshot
	// may predate the channel lock it waited for (see channelUser).
	p.hasChan, p.hasCU, p.hasUser = true, p.cu != nil || !t.write, true
	p.userFresh = !t.lockUsers[userID]
	t.pre = &p
	t.preRoles = nil
	if p.user != nil {
		t.preRoles = &prefetchedRoles{ids: slices.Clone(p.user.Roles), list: row.roles}
	}
	t.vers = row.v
	t.targets = nil
	if t.write {
		t.targets = &prefetchedTargets{channelID: channelID, userID: userID, list: row.pt}
	}
}

// prefetchedRoles are the roles named by the author's row that
// PrefetchPost read (ids, in the row's order), served once to a GetRoles of
// exactly those ids until a statement names the roles table.
type prefetchedRoles struct {
	ids  []string
	list []*chat.Role
}

// decodeRoles decodes the roles column of prefetchSQL: an array of
// [roleId, permissions, createdAt ms, updatedAt ms].
func decodeRoles(b []byte) ([]*chat.Role, error) {
	if b == nil {
		return nil, nil
	}
	var raw [][4]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	out := make([]*chat.Role, len(raw))
	for i, r := range raw {
		var (
			id               string
			perms            []string
			created, updated int64
		)
		for j, dst := range []any{&id, &perms, &created, &updated} {
			if err := json.Unmarshal(r[j], dst); err != nil {
				return nil, err
			}
		}
		out[i] = &chat.Role{RoleID: id, Permissions: arrayOut(perms),
			CreatedAt: ct(time.UnixMilli(created)), UpdatedAt: ct(time.UnixMilli(updated))}
	}
	return out, nil
}

// prefetchedRolesFor answers GetRoles from the prefetch when ids are the
// author's roles it read.
func (t *tx) prefetchedRolesFor(ids []string) ([]*chat.Role, bool) {
	p := t.preRoles
	if p == nil || !slices.Equal(p.ids, ids) {
		return nil, false
	}
	t.preRoles = nil
	return p.list, true
}

// window scans some of the columns of a row: all holds a destination for
// every column, and a scan fills the ones it asks for and skips the
// others.
type window struct {
	r    *sql.Rows
	all  []any
	from int // for Scan
}

// at returns the window whose Scan fills the columns from from on.
func (w window) at(from int) window {
	w.from = from
	return w
}

// Scan scans the columns [from, from+len(dest)) of the row into dest.
func (w window) Scan(dest ...any) error {
	for i := range w.all {
		if i >= w.from && i < w.from+len(dest) {
			w.all[i] = dest[i-w.from]
		} else {
			w.all[i] = skipColumn{}
		}
	}
	return w.r.Scan(w.all...)
}

// skipColumn is the destination of a column that a scan does not ask
// for: it keeps nothing, so the column costs no copy.
type skipColumn struct{}

func (skipColumn) Scan(any) error { return nil }

// notNull scans whether a column is not NULL.
type notNull bool

func (n *notNull) Scan(v any) error {
	*n = v != nil
	return nil
}

// prefetch returns the prefetched rows while they are valid, or nil.
func (t *tx) prefetch() *prefetched { return t.pre }

// touchesPrefetched reports whether a statement template names a table of
// the prefetched rows. Statements that do not (reads of roles, of
// messages...) leave them valid. The triggers of those tables write only
// those tables.
func touchesPrefetched(tmpl string) bool {
	return strings.Contains(tmpl, "{s}channels") || strings.Contains(tmpl, "{s}channel_users") ||
		strings.Contains(tmpl, "{s}users")
}

// prefetchedChannel answers GetChannel from the prefetch when it can.
func (t *tx) prefetchedChannel(channelID string) (c *chat.Channel, ok bool) {
	p := t.prefetch()
	if p == nil || !p.hasChan || p.channelID != channelID {
		return nil, false
	}
	p.hasChan = false
	return p.channel, true
}

// prefetchedChannelUser answers GetChannelUser from the prefetch when it
// can.
func (t *tx) prefetchedChannelUser(channelID, userID string) (cu *chat.ChannelUser, ok bool) {
	p := t.prefetch()
	if p == nil || !p.hasCU || p.channelID != channelID || p.userID != userID {
		return nil, false
	}
	p.hasCU = false
	return p.cu, true
}

// prefetchedUser answers GetUser from the prefetch when it can.
func (t *tx) prefetchedUser(userID string) (u *chat.User, ok bool) {
	p := t.prefetch()
	if p == nil || !p.hasUser || !p.userFresh || p.userID != userID {
		return nil, false
	}
	p.hasUser = false
	if u = p.user; u != nil {
		t.readUsers([]*chat.User{u}, false)
	}
	return u, true
}

// pendingAppend is an AppendMessage whose statement has not run yet.
type pendingAppend struct {
	messageID, channelID, parentID string
	segment                        int64
	args                           []any         // appendSQL's
	row                            *groupPostRow // in a commit group: the message for groupAppendSQL
}

// deferAppend answers AppendMessage without a statement when PrefetchPost
// locked the channel's row (which is open) and it is still valid: the row
// cannot have changed, so the updated channel is known. The
// writes then run with the next statement of the transaction: with
// AppendEvents in one statement (appendWithEventsSQL), else just before
// it or before the commit (flushAppend). A duplicate message id or a value
// the database refuses is reported there, and the transaction cannot
// commit. It returns nil when the statement must run now.
func (t *tx) deferAppend(m *chat.Message, now time.Time, args []any) *chat.Channel {
	p := t.prefetch()
	if !t.write || p == nil || p.locked == nil || p.locked.IsClosed || p.channelID != m.ChannelID {
		return nil
	}
	c := p.locked
	t.pre = nil // the channel row changes
	c.MessageCount++
	c.LastActivity = chat.NewTime(now)
	c.UpdatedAt = c.LastActivity
	t.pend = &pendingAppend{messageID: m.MessageID, channelID: m.ChannelID, parentID: m.ParentID, segment: c.MessageCount, args: args}
	if t.grp != nil {
		t.pend.row = postRow(m, now, args)
		t.grp.posted(c)
	}
	return c
}

// flushAppend runs the deferred AppendMessage, if any, and then the
// deliveries held back with it.
func (t *tx) flushAppend(ctx context.Context) error {
	p := t.pend
	if p == nil {
		return nil
	}
	t.pend = nil
	_, err := t.appendNow(ctx, p.messageID, p.channelID, p.args)
	if err == nil && t.pendDel != nil {
		d := t.pendDel
		t.pendDel = nil
		var inserted, pending int
		if err = t.queryRow(ctx, enqueueSQL, d.args, &inserted, &pending); err == nil {
			err = t.noteEnqueued(d.n, inserted, pending)
		}
	}
	t.pendDel = nil
	if err != nil && t.failed == nil {
		t.failed = err
	}
	return err
}

// appendWithEventsSQL is a deferred AppendMessage ($1-$20, as appendSQL)
// and AppendEvents ($21-$25, as appendEventsSQL) in one statement. It
// returns each event's key, the log's last id and the count of message
// rows inserted.
//
// Its message INSERT has no ON CONFLICT clause: a duplicate id or segment
// fails the statement (unique_violation, CodeConflict) and with it the
// transaction, which a deferred AppendMessage's failure fails in any
// case, and the insert is not speculative (no pre-check of the unique
// indexes, no confirmation record).
var appendWithEventsSQL = appendDeferredCTEs + eventsTailSQL("$21")

// appendWithDeliveriesSQL is appendWithEventsSQL with a held-back
// EnqueueDeliveries ($21-$33, as enqueueSQL) between the message and the
// events ($34-$38): a post of a deployment with webhooks is still BEGIN,
// the post's reads, this statement and COMMIT. It returns, after
// appendWithEventsSQL's columns, the deliveries inserted and the pending
// ones among them due for a claim (enqueueSQL's count).
var appendWithDeliveriesSQL = withDeliveries(appendDeferredCTEs, 20)

// withDeliveries is the statement of message writes ctes (parameters $1-$n)
// followed by the deliveries (enqueueSQL's, $n+1-$n+13) and the events
// (appendEventsSQL's, from $n+14): it returns, after the events' columns,
// the deliveries inserted and the pending ones among them.
func withDeliveries(ctes string, n int) string {
	return ctes + `, dl AS (
			` + shiftParams(enqueueDeliveriesCTE, n) + `
		)` + strings.Replace(eventsTailSQL("$"+strconv.Itoa(n+14)), "(SELECT count(*) FROM ins) FROM ev",
		"(SELECT count(*) FROM ins), (SELECT count(*) FROM dl), (SELECT count(*) FROM dl WHERE state = 'pending' AND lease_owner = '') FROM ev", 1)
}

// shiftParams renumbers the parameters $1-$99 of a statement part by by.
func shiftParams(q string, by int) string {
	return paramRE.ReplaceAllStringFunc(q, func(p string) string {
		n, _ := strconv.Atoi(p[1:])
		return "$" + strconv.Itoa(n+by)
	})
}

var paramRE = regexp.MustCompile(`\$[0-9]+`)

// eventsTailSQL is the events part of the deferred statements: their
// parameters (as appendEventsSQL's) start at first.
func eventsTailSQL(first string) string {
	n, _ := strconv.Atoi(first[1:])
	return shiftParams(eventsTail, n-1)
}

// eventsTail's parameters are $1-$5; eventsTailSQL shifts them.
const eventsTail = `, ev AS (
		INSERT INTO {s}events_pending (name, channel_id, user_ids, data, created_at)
		SELECT x.n, x.c, x.u, x.d, x.t::timestamptz
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[])
			WITH ORDINALITY AS x(n, c, u, d, t, ord)
		ORDER BY x.ord
		RETURNING seq
	)
	SELECT ev.seq, (SELECT last_id FROM {s}event_log_head), (SELECT count(*) FROM ins) FROM ev`
