package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var auditCases = []tcase{
	{"AppendAndRead", testAuditAppend},
	{"DuplicateID", testAuditDuplicate},
	{"Filters", testAuditFilters},
	{"KeysetPaging", testAuditPaging},
	{"RolledBackWithTheAction", testAuditRollback},
	{"SetDetails", testAuditSetDetails},
}

var purgeCases = []tcase{
	{"BatchesInOrder", testPurgeBatches},
	{"ChannelAndTimeBounds", testPurgeBounds},
	{"RolledBack", testPurgeRollback},
}

func auditEntry(id, actor, action, targetType, target, channel string, ms int64) *chat.AuditEntry {
	return &chat.AuditEntry{AuditID: id, ActorID: actor, Action: action, TargetType: targetType, TargetID: target,
		ChannelID: channel, Details: map[string]any{"n": float64(ms), "list": []any{"a", "b"}, "flag": true}, CreatedAt: at(ms)}
}

func auditIDs(es []*chat.AuditEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.AuditID
	}
	return out
}

func (e *env) appendAudit(es ...*chat.AuditEntry) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error { return tx.AppendAudit(e.ctx, es) })
}

func (e *env) queryAudit(f chat.AuditFilter) []*chat.AuditEntry {
	e.t.Helper()
	return read(e, func(tx chat.Tx) ([]*chat.AuditEntry, error) { return tx.QueryAudit(e.ctx, f) })
}

// Entries read back exactly as written (details as JSON values, empty
// actor and channel as ""), newest first.
func testAuditAppend(t *testing.T, e *env) {
	a := auditEntry("a1", "admin", "channel.mute", "channel", "c1", "c1", 1000)
	b := auditEntry("a2", "", "admin.create", "admin", "ops", "", 2000)
	b.Details = nil
	e.appendAudit(a, b)
	got := e.queryAudit(chat.AuditFilter{})
	require.Equal(t, []string{"a2", "a1"}, auditIDs(got))
	require.Equal(t, "", got[0].ActorID)
	require.Equal(t, "", got[0].ChannelID)
	require.Empty(t, got[0].Details)
	require.Equal(t, "admin", got[1].ActorID)
	require.Equal(t, "channel.mute", got[1].Action)
	require.Equal(t, "channel", got[1].TargetType)
	require.Equal(t, "c1", got[1].TargetID)
	require.Equal(t, "c1", got[1].ChannelID)
	require.Equal(t, map[string]any{"n": float64(1000), "list": []any{"a", "b"}, "flag": true}, got[1].Details)
	require.True(t, got[1].CreatedAt.Equal(at(1000).Time))
	require.Equal(t, time.UTC, got[1].CreatedAt.Location())
}

// A second entry with an existing id is CodeConflict, and the failed
// Update leaves nothing of its batch.
func testAuditDuplicate(t *testing.T, e *env) {
	e.appendAudit(auditEntry("a1", "x", "role.put", "role", "r", "", 0))
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		return tx.AppendAudit(e.ctx, []*chat.AuditEntry{auditEntry("a2", "x", "role.put", "role", "r", "", 1), auditEntry("a1", "y", "role.put", "role", "r", "", 2)})
	})
	require.Equal(t, chat.CodeConflict, chat.ErrorCode(err))
	require.Equal(t, []string{"a1"}, auditIDs(e.queryAudit(chat.AuditFilter{})))
}

// Each filter keeps exact matches only; filters combine.
func testAuditFilters(t *testing.T, e *env) {
	e.appendAudit(
		auditEntry("a1", "alice", "channel.banUsers", "user", "bob", "c1", 1000),
		auditEntry("a2", "alice", "channel.banUsers", "user", "carl", "c2", 2000),
		auditEntry("a3", "dave", "channel.mute", "channel", "c1", "c1", 3000),
		auditEntry("a4", "dave", "user.globalBan", "user", "bob", "", 4000),
		auditEntry("a5", "", "admin.revoke", "admin", "alice", "", 5000),
		auditEntry("a6", "alicex", "role.put", "role", "bo", "", 6000),
	)
	for _, c := range []struct {
		f    chat.AuditFilter
		want []string
	}{
		{chat.AuditFilter{ActorID: "alice"}, []string{"a2", "a1"}},
		{chat.AuditFilter{ActorID: "dave"}, []string{"a4", "a3"}},
		{chat.AuditFilter{TargetID: "bob"}, []string{"a4", "a1"}},
		{chat.AuditFilter{TargetID: "alice"}, []string{"a5"}},
		{chat.AuditFilter{ChannelID: "c1"}, []string{"a3", "a1"}},
		{chat.AuditFilter{Action: "channel.banUsers"}, []string{"a2", "a1"}},
		{chat.AuditFilter{ActorID: "alice", ChannelID: "c2"}, []string{"a2"}},
		{chat.AuditFilter{TargetID: "bob", Action: "user.globalBan"}, []string{"a4"}},
		{chat.AuditFilter{ActorID: "nobody"}, nil},
		{chat.AuditFilter{ChannelID: "c"}, nil},
		{chat.AuditFilter{Limit: 2}, []string{"a6", "a5"}},
	} {
		require.Equal(t, c.want, nilIfEmpty(auditIDs(e.queryAudit(c.f))), "%+v", c.f)
	}
}

// After pages toward older entries, Before toward newer ones (returned
// oldest first); entries of the same instant are ordered by id; an entry
// added later never makes a page skip or repeat one.
func testAuditPaging(t *testing.T, e *env) {
	e.appendAudit(
		auditEntry("a1", "x", "role.put", "role", "r", "", 1000),
		auditEntry("a2", "x", "role.put", "role", "r", "", 2000),
		auditEntry("a3", "x", "role.put", "role", "r", "", 2000),
		auditEntry("a4", "x", "role.put", "role", "r", "", 3000),
		auditEntry("a5", "y", "role.put", "role", "r", "", 4000),
	)
	cur := func(ms int64, id string) *chat.AuditCursor {
		return &chat.AuditCursor{CreatedAt: at(ms).Time, AuditID: id}
	}
	require.Equal(t, []string{"a5", "a4"}, auditIDs(e.queryAudit(chat.AuditFilter{Limit: 2})))
	e.appendAudit(auditEntry("a6", "x", "role.put", "role", "r", "", 5000))
	require.Equal(t, []string{"a3", "a2"}, auditIDs(e.queryAudit(chat.AuditFilter{After: cur(3000, "a4"), Limit: 2})))
	require.Equal(t, []string{"a1"}, auditIDs(e.queryAudit(chat.AuditFilter{After: cur(2000, "a2"), Limit: 2})))
	require.Equal(t, []string{"a4", "a5"}, auditIDs(e.queryAudit(chat.AuditFilter{Before: cur(2000, "a3"), Limit: 2})))
	require.Equal(t, []string{"a3", "a4", "a5", "a6"}, auditIDs(e.queryAudit(chat.AuditFilter{Before: cur(2000, "a2")})))
	require.Equal(t, []string{"a4", "a3"}, auditIDs(e.queryAudit(chat.AuditFilter{ActorID: "x", After: cur(4000, "a5"), Limit: 2})))
	require.Equal(t, []string{"a4"}, auditIDs(e.queryAudit(chat.AuditFilter{ActorID: "x", After: cur(5000, "a6"), Before: cur(2000, "a3")})))
}

// An entry written in a transaction that fails goes with the rest of the
// transaction's writes.
func testAuditRollback(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	boom := errors.New("boom")
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		c, err := tx.GetChannel(e.ctx, "c")
		require.NoError(t, err)
		c.MuteTimeout = atp(60000)
		require.NoError(t, tx.UpdateChannel(e.ctx, c))
		require.NoError(t, tx.AppendAudit(e.ctx, []*chat.AuditEntry{auditEntry("a1", "x", "channel.mute", "channel", "c", "c", 1)}))
		got, err := tx.QueryAudit(e.ctx, chat.AuditFilter{})
		require.NoError(t, err)
		require.Equal(t, []string{"a1"}, auditIDs(got), "read your own entry")
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Empty(t, e.queryAudit(chat.AuditFilter{}))
	require.Nil(t, e.channel("c").MuteTimeout)
	// Committed together.
	e.update(func(tx chat.Tx) error {
		c, err := tx.GetChannel(e.ctx, "c")
		require.NoError(t, err)
		c.MuteTimeout = atp(60000)
		require.NoError(t, tx.UpdateChannel(e.ctx, c))
		return tx.AppendAudit(e.ctx, []*chat.AuditEntry{auditEntry("a1", "x", "channel.mute", "channel", "c", "c", 1)})
	})
	require.Equal(t, []string{"a1"}, auditIDs(e.queryAudit(chat.AuditFilter{})))
	require.NotNil(t, e.channel("c").MuteTimeout)
}

// SetAuditDetails replaces the details only; an unknown id is
// CodeNotFound; a failed transaction keeps the old details.
func testAuditSetDetails(t *testing.T, e *env) {
	e.appendAudit(auditEntry("a1", "x", "user.purgeMessages", "user", "u", "", 1000), auditEntry("a2", "x", "role.put", "role", "r", "", 2000))
	e.update(func(tx chat.Tx) error {
		return tx.SetAuditDetails(e.ctx, "a1", map[string]any{"deleted": float64(500), "complete": false})
	})
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		require.NoError(t, tx.SetAuditDetails(e.ctx, "a1", map[string]any{"deleted": float64(900)}))
		return errors.New("boom")
	})
	require.Error(t, err)
	_, err = writeErr(e, func(tx chat.Tx) (int, error) { return 0, tx.SetAuditDetails(e.ctx, "zz", map[string]any{}) })
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
	got := e.queryAudit(chat.AuditFilter{ActorID: "x"})
	require.Equal(t, []string{"a2", "a1"}, auditIDs(got))
	require.Equal(t, map[string]any{"deleted": float64(500), "complete": false}, got[1].Details)
	require.Equal(t, "user.purgeMessages", got[1].Action)
	require.True(t, got[1].CreatedAt.Equal(at(1000).Time))
}

// purgeFixture stores messages of u (and one of v) in channels a and b:
// u's messages m01..m12 created one second apart (m07 already deleted),
// inserted out of creation order.
func purgeFixture(e *env) {
	e.t.Helper()
	e.createChannels(newChannel("a", at(0)), newChannel("b", at(0)))
	var ms []*chat.Message
	for i := int64(12); i >= 1; i-- {
		ch := "a"
		if i%3 == 0 {
			ch = "b"
		}
		m := newMessage(purgeID(i), ch, "u", i)
		if ch == "b" {
			m.ChannelSegment = 100 + i
		}
		m.IsDeleted = i == 7
		ms = append(ms, m)
	}
	ms = append(ms, newMessage("v1", "a", "v", 50))
	e.createMessages(ms...)
}

func purgeID(i int64) string { return "m" + string(rune('0'+i/10)) + string(rune('0'+i%10)) }

func (e *env) purge(f chat.PurgeFilter) []*chat.Message {
	e.t.Helper()
	return write(e, func(tx chat.Tx) ([]*chat.Message, error) { return tx.SoftDeleteBatch(e.ctx, f, at(99000).Time) })
}

// Batches come in (createdAt, messageId) order, each after the cursor of
// the last, skip deleted messages and other authors, and leave each
// message deleted with data {} and updatedAt now.
func testPurgeBatches(t *testing.T, e *env) {
	purgeFixture(e)
	b1 := e.purge(chat.PurgeFilter{UserID: "u", Limit: 5})
	require.Equal(t, []string{"m01", "m02", "m03", "m04", "m05"}, messageIDs(b1))
	for _, m := range b1 {
		require.True(t, m.IsDeleted)
		require.Empty(t, m.Data)
		require.True(t, m.UpdatedAt.Equal(at(99000).Time))
	}
	last := b1[4]
	b2 := e.purge(chat.PurgeFilter{UserID: "u", Limit: 5, After: &chat.PurgeCursor{CreatedAt: last.CreatedAt.Time, MessageID: last.MessageID}})
	require.Equal(t, []string{"m06", "m08", "m09", "m10", "m11"}, messageIDs(b2))
	last = b2[4]
	b3 := e.purge(chat.PurgeFilter{UserID: "u", Limit: 5, After: &chat.PurgeCursor{CreatedAt: last.CreatedAt.Time, MessageID: last.MessageID}})
	require.Equal(t, []string{"m12"}, messageIDs(b3))
	require.Empty(t, e.purge(chat.PurgeFilter{UserID: "u", Limit: 5}))
	got := e.message("m03")
	require.True(t, got.IsDeleted)
	require.Empty(t, got.Data)
	require.Equal(t, int64(103), got.ChannelSegment, "segment kept")
	require.False(t, e.message("v1").IsDeleted)
	require.True(t, e.message("m07").UpdatedAt.Equal(at(7000).Time), "an already deleted message is not touched")
	// The messages read back deleted in channel queries, too.
	live := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
		return tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: "a"})
	})
	require.Equal(t, []string{"v1"}, messageIDs(live))
}

// ChannelID, Since and Until bound the batch (Since and Until inclusive).
func testPurgeBounds(t *testing.T, e *env) {
	purgeFixture(e)
	require.Equal(t, []string{"m03", "m06"}, messageIDs(e.purge(chat.PurgeFilter{UserID: "u", ChannelID: "b", Until: at(6000).Time})))
	require.Equal(t, []string{"m08", "m10"}, messageIDs(e.purge(chat.PurgeFilter{UserID: "u", ChannelID: "a", Since: at(7000).Time, Until: at(10000).Time})))
	require.Equal(t, []string{"m09", "m11", "m12"}, messageIDs(e.purge(chat.PurgeFilter{UserID: "u", Since: at(9000).Time})))
	require.Equal(t, []string{"m01", "m02", "m04", "m05"}, messageIDs(e.purge(chat.PurgeFilter{UserID: "u"})))
	require.Empty(t, e.purge(chat.PurgeFilter{UserID: "nobody"}))
}

// A batch in a failed transaction leaves the messages as they were.
func testPurgeRollback(t *testing.T, e *env) {
	purgeFixture(e)
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		ms, err := tx.SoftDeleteBatch(e.ctx, chat.PurgeFilter{UserID: "u", Limit: 3}, at(99000).Time)
		require.NoError(t, err)
		require.Len(t, ms, 3)
		return errors.New("boom")
	})
	require.Error(t, err)
	m := e.message("m01")
	require.False(t, m.IsDeleted)
	require.Equal(t, "hello m01", m.Data["text"])
	require.Equal(t, []string{"m01", "m02", "m03"}, messageIDs(e.purge(chat.PurgeFilter{UserID: "u", Limit: 3})))
}
