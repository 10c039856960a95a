package postgres

import (
	"context"
	"sync"
	"time"

	chat "github.com/chatengine/chat"
)

// Predicted appends.
//
// A message posted alone costs two round trips on the plain path: BEGIN
// with the append statement (the Service needs the new segment back), then
// COMMIT. When this store has seen the channel row before (its last
// append, or a read in an Update), it knows what the append will do: the
// row's version, messageCount and memberCount tell it the next segment and
// the row that results. AppendMessage then returns that result at once and
// leaves its statement pending on the lane, to go out with the next
// statement of the transaction or with COMMIT: a lone post is one round
// trip, and a batch of posts on different channels is one round trip for
// the whole batch.
//
// The pending statement checks the prediction: it updates the channel only
// at the predicted version, messageCount and memberCount (and not closed),
// and it writes the predicted segment; when the row differs, its insert
// fails (a NOT NULL violation on purpose) and the batch is rolled back. Every
// write of a channel row other than memberCount bumps its version, so a row
// that passes the check has exactly the predicted columns. The calls of
// a failed batch run again (Update's retries) on the plain path, which
// reports the real outcome (not found, closed, conflict). Appends are only
// predicted when Options.Retries allows a second run, and a channel whose
// prediction failed is not predicted for a second, so several processes
// posting to one channel do not keep failing.

// maxPredicted bounds the channel rows the store remembers.
const maxPredicted = 4096

// predictCooldown is how long a channel whose prediction failed is not
// predicted.
const predictCooldown = time.Second

type predicted struct {
	c    *chat.Channel // never modified once stored
	ver  int64
	cool time.Time // not predicted before then
}

type predictions struct {
	mu sync.Mutex
	m  map[string]predicted
}

// get returns the channel row as this store expects it (not to be
// modified), and its version.
func (p *predictions) get(id string) (*chat.Channel, int64, bool) {
	p.mu.Lock()
	e, ok := p.m[id]
	p.mu.Unlock()
	if !ok || e.c == nil {
		return nil, 0, false
	}
	return e.c, e.ver, true
}

func cloneChannel(c *chat.Channel) *chat.Channel {
	out := *c
	out.Tags = append([]string{}, c.Tags...)
	out.Metadata = cloneJSONMap(c.Metadata)
	if c.MuteTimeout != nil {
		mt := *c.MuteTimeout
		out.MuteTimeout = &mt
	}
	return &out
}

// put remembers the row c at version ver (c must not be modified
// afterwards), unless the channel cools down after a failure or a newer
// version is known.
func (p *predictions) put(c *chat.Channel, ver int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[c.ChannelID]
	switch {
	case ok && e.c == nil && time.Now().Before(e.cool):
		return
	case ok && e.c != nil && e.ver > ver:
		return
	}
	if p.m == nil || (!ok && len(p.m) >= maxPredicted) {
		p.m = make(map[string]predicted)
	}
	p.m[c.ChannelID] = predicted{c: c, ver: ver}
}

// forget drops what the store expects of the channel; after a failed
// prediction the channel is not predicted for predictCooldown.
func (p *predictions) forget(id string, failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if failed {
		if p.m == nil {
			p.m = make(map[string]predicted)
		}
		p.m[id] = predicted{cool: time.Now().Add(predictCooldown)}
		return
	}
	delete(p.m, id)
}

// predictedChannel is the channel update of a predicted append; $18..$20
// are the expected version, messageCount and memberCount.
const predictedChannel = `WITH c AS (
		UPDATE {s}channels
		SET message_count = message_count + 1, last_activity = $2, updated_at = $2, version = version + 1
		WHERE channel_id = $1 AND version = $18::bigint AND message_count = $19::bigint
			AND member_count = $20::integer AND NOT is_closed
		RETURNING channel_id
	)`

// predictedInsert inserts the message with segment $19 + 1. When the
// channel row is not as expected, c is empty and the LEFT JOIN makes the
// insert fail on the NOT NULL channel_id.
const predictedInsert = `INSERT INTO {s}messages (` + messageCols + `)
	SELECT $3::text, c.channel_id, $4::text, $5::text, $6::json, $7::text[], $8::text,
		$9::boolean, $10::timestamptz, $11::timestamptz, $12::timestamptz, $19::bigint + 1,
		$13::integer, $14::integer, $15::json, $16::jsonb, $17::integer
	FROM (SELECT) one LEFT JOIN c ON true`

// appendPredictedSQL is the pending statement of a predicted append
// without a parent.
const appendPredictedSQL = predictedChannel + predictedInsert

// appendPredictedParentSQL is appendPredictedSQL for a comment: it also
// increments the parent's childrenNumber.
const appendPredictedParentSQL = predictedChannel + `, ins AS (` + predictedInsert + ` RETURNING parent_id)
	UPDATE {s}messages p SET children_number = p.children_number + 1
	FROM ins WHERE p.message_id = ins.parent_id`

// appendPredicted is AppendMessage with a predicted channel row (see
// above); ok is false when the append is not to be predicted.
func (t *tx) appendPredicted(ctx context.Context, m *chat.Message, now time.Time, args []any) (*chat.Channel, bool, error) {
	if t.b == nil || t.lock || t.s.opt.Retries <= 0 || t.s.opt.NoPrepare {
		return nil, false, nil
	}
	c, ver, ok := t.s.pred.get(m.ChannelID)
	if !ok || c.IsClosed {
		return nil, false, nil
	}
	key := channelKey(m.ChannelID)
	if v, seen := t.versions[key]; seen && v != ver {
		// This transaction saw another version of the row.
		return nil, false, nil
	}
	tmpl := appendPredictedSQL
	if m.ParentID != "" {
		tmpl = appendPredictedParentSQL
	}
	ok, err := t.b.pend(t, ctx, tmpl, append(args, ver, c.MessageCount, c.MemberCount))
	if err != nil {
		return nil, true, t.fail(err)
	}
	if !ok {
		return nil, false, nil
	}
	next := *c // shares tags and metadata, which nobody modifies
	next.MessageCount++
	next.LastActivity, next.UpdatedAt = chat.NewTime(now), chat.NewTime(now)
	t.wrote(key, ver+1)
	t.wrote(messageKey(m.MessageID), 1)
	t.s.pred.put(&next, ver+1)
	t.predicted = append(t.predicted, m.ChannelID)
	if t.posted == nil {
		t.posted = &posted{m.MessageID, m.ChannelID, next.MessageCount}
	}
	return cloneChannel(&next), true, nil
}
