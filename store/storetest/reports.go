package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var reportCases = []tcase{
	{"CreateAndGet", testReportCreateGet},
	{"OneOpenPerReporterAndTarget", testReportOneOpen},
	{"Update", testReportUpdate},
	{"FiltersAndPaging", testReportQuery},
	{"RolledBack", testReportRollback},
	{"ConcurrentSameTarget", testReportConcurrent},
	{"ConcurrentResolve", testReportConcurrentResolve},
}

var userDataCases = []tcase{
	{"UserMessagesPaged", testUserMessages},
	{"UserReactionsPaged", testUserReactions},
}

func newReport(id, reporter, targetType, target string, ms int64) *chat.Report {
	r := &chat.Report{ReportID: id, ReporterID: reporter, TargetType: targetType, TargetID: target, Reason: "spam",
		Note: "note of " + id, State: chat.ReportOpen, CreatedAt: at(ms)}
	if targetType == chat.ReportTargetMessage {
		r.ChannelID = "c"
	}
	return r
}

func (e *env) createReports(rs ...*chat.Report) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error {
		for _, r := range rs {
			if err := tx.CreateReport(e.ctx, r); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *env) queryReports(f chat.ReportFilter) []string {
	e.t.Helper()
	rs := read(e, func(tx chat.Tx) ([]*chat.Report, error) { return tx.QueryReports(e.ctx, f) })
	var out []string
	for _, r := range rs {
		out = append(out, r.ReportID)
	}
	return out
}

func (e *env) report(id string) (*chat.Report, error) {
	return readErr(e, func(tx chat.Tx) (*chat.Report, error) { return tx.GetReport(e.ctx, id) })
}

// A report reads back as written (empty channel as "", no resolution,
// times in UTC); an unknown id is CodeNotFound; a taken id CodeConflict.
func testReportCreateGet(t *testing.T, e *env) {
	e.createReports(newReport("r1", "alice", chat.ReportTargetMessage, "m1", 1000), newReport("r2", "alice", chat.ReportTargetUser, "bob", 2000))
	got, err := e.report("r1")
	require.NoError(t, err)
	require.Equal(t, newReport("r1", "alice", chat.ReportTargetMessage, "m1", 1000), normReport(got))
	require.Equal(t, time.UTC, got.CreatedAt.Location())
	got, err = e.report("r2")
	require.NoError(t, err)
	require.Equal(t, "", got.ChannelID)
	require.Nil(t, got.Resolution)
	require.Nil(t, got.ResolvedAt)
	_, err = e.report("zz")
	requireNotFound(t, err)
	_, err = writeErr(e, func(tx chat.Tx) (int, error) {
		return 0, tx.CreateReport(e.ctx, newReport("r1", "carol", chat.ReportTargetUser, "dave", 3000))
	})
	requireConflict(t, err)
}

// normReport makes times comparable with ==.
func normReport(r *chat.Report) *chat.Report {
	v := *r
	v.CreatedAt = chat.NewTime(r.CreatedAt.Time)
	if r.ResolvedAt != nil {
		at := chat.NewTime(r.ResolvedAt.Time)
		v.ResolvedAt = &at
	}
	return &v
}

// A reporter has at most one open report of a target: a second is
// CodeConflict (the failed Update leaves nothing of its batch); other
// reporters, other targets and, once the first is resolved, the same
// reporter again may report it.
func testReportOneOpen(t *testing.T, e *env) {
	e.createReports(newReport("r1", "alice", chat.ReportTargetUser, "bob", 1000))
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		if err := tx.CreateReport(e.ctx, newReport("r0", "carol", chat.ReportTargetUser, "bob", 1500)); err != nil {
			return err
		}
		return tx.CreateReport(e.ctx, newReport("r2", "alice", chat.ReportTargetUser, "bob", 2000))
	})
	requireConflict(t, err)
	require.Equal(t, []string{"r1"}, e.queryReports(chat.ReportFilter{}))
	e.createReports(newReport("r3", "carol", chat.ReportTargetUser, "bob", 3000), newReport("r4", "alice", chat.ReportTargetMessage, "bob", 4000))
	r, err := e.report("r1")
	require.NoError(t, err)
	r.State, r.ResolvedAt = chat.ReportResolved, atp(5000)
	r.Resolution = &chat.ReportResolution{Action: chat.ResolveDismiss, ActorID: "admin"}
	e.update(func(tx chat.Tx) error { return tx.UpdateReport(e.ctx, r) })
	e.createReports(newReport("r5", "alice", chat.ReportTargetUser, "bob", 6000))
	require.Equal(t, []string{"r5", "r4", "r3", "r1"}, e.queryReports(chat.ReportFilter{}))
}

// UpdateReport replaces note, state, resolution and resolvedAt, nothing
// else; an unknown id is CodeNotFound.
func testReportUpdate(t *testing.T, e *env) {
	e.createReports(newReport("r1", "alice", chat.ReportTargetMessage, "m1", 1000))
	r, err := e.report("r1")
	require.NoError(t, err)
	r.Note, r.State, r.ResolvedAt = "", chat.ReportResolved, atp(2000)
	r.Resolution = &chat.ReportResolution{Action: chat.ResolveBanUser, ActorID: "admin", ChannelID: "c"}
	r.Reason, r.TargetID = "changed", "changed"
	e.update(func(tx chat.Tx) error { return tx.UpdateReport(e.ctx, r) })
	got, err := e.report("r1")
	require.NoError(t, err)
	require.Equal(t, "", got.Note)
	require.Equal(t, chat.ReportResolved, got.State)
	require.Equal(t, &chat.ReportResolution{Action: chat.ResolveBanUser, ActorID: "admin", ChannelID: "c"}, got.Resolution)
	require.True(t, got.ResolvedAt.Equal(at(2000).Time))
	require.Equal(t, "spam", got.Reason, "reason is not written")
	require.Equal(t, "m1", got.TargetID, "target is not written")
	_, err = writeErr(e, func(tx chat.Tx) (int, error) {
		return 0, tx.UpdateReport(e.ctx, newReport("zz", "a", chat.ReportTargetUser, "b", 0))
	})
	requireNotFound(t, err)
}

// Filters keep exact matches and combine; After pages toward older
// reports, Before toward newer ones (oldest first); a report added later
// never makes a page skip or repeat one.
func testReportQuery(t *testing.T, e *env) {
	e.createReports(
		newReport("r1", "alice", chat.ReportTargetMessage, "m1", 1000),
		newReport("r2", "bob", chat.ReportTargetUser, "carl", 2000),
		newReport("r3", "alice", chat.ReportTargetUser, "carl", 2000),
		newReport("r4", "alicex", chat.ReportTargetMessage, "m2", 3000),
		newReport("r5", "bob", chat.ReportTargetMessage, "m1", 4000),
	)
	r, err := e.report("r2")
	require.NoError(t, err)
	r.State, r.ResolvedAt = chat.ReportResolved, atp(4500)
	r.Resolution = &chat.ReportResolution{Action: chat.ResolveGlobalBan, ActorID: "admin"}
	e.update(func(tx chat.Tx) error { return tx.UpdateReport(e.ctx, r) })
	for _, c := range []struct {
		f    chat.ReportFilter
		want []string
	}{
		{chat.ReportFilter{}, []string{"r5", "r4", "r3", "r2", "r1"}},
		{chat.ReportFilter{State: chat.ReportOpen}, []string{"r5", "r4", "r3", "r1"}},
		{chat.ReportFilter{State: chat.ReportResolved}, []string{"r2"}},
		{chat.ReportFilter{TargetType: chat.ReportTargetUser}, []string{"r3", "r2"}},
		{chat.ReportFilter{State: chat.ReportOpen, TargetType: chat.ReportTargetUser}, []string{"r3"}},
		{chat.ReportFilter{ReporterID: "alice"}, []string{"r3", "r1"}},
		{chat.ReportFilter{ReporterID: "nobody"}, nil},
		{chat.ReportFilter{Limit: 2}, []string{"r5", "r4"}},
	} {
		require.Equal(t, c.want, e.queryReports(c.f), "%+v", c.f)
	}
	cur := func(ms int64, id string) *chat.ReportCursor {
		return &chat.ReportCursor{CreatedAt: at(ms).Time, ReportID: id}
	}
	e.createReports(newReport("r6", "dave", chat.ReportTargetUser, "x", 5000))
	require.Equal(t, []string{"r3", "r2"}, e.queryReports(chat.ReportFilter{After: cur(3000, "r4"), Limit: 2}))
	require.Equal(t, []string{"r1"}, e.queryReports(chat.ReportFilter{After: cur(2000, "r2"), Limit: 2}))
	require.Equal(t, []string{"r4", "r5"}, e.queryReports(chat.ReportFilter{Before: cur(2000, "r3"), Limit: 2}))
	require.Equal(t, []string{"r1"}, e.queryReports(chat.ReportFilter{State: chat.ReportOpen, After: cur(2000, "r3")}))
	require.Equal(t, []string{"r3", "r4", "r5", "r6"}, e.queryReports(chat.ReportFilter{State: chat.ReportOpen, Before: cur(1000, "r1")}))
}

// A report created or resolved in a transaction that fails is gone with
// it, and its open key too.
func testReportRollback(t *testing.T, e *env) {
	boom := errors.New("boom")
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		require.NoError(t, tx.CreateReport(e.ctx, newReport("r1", "alice", chat.ReportTargetUser, "bob", 1000)))
		return boom
	})
	require.ErrorIs(t, err, boom)
	_, err = e.report("r1")
	requireNotFound(t, err)
	e.createReports(newReport("r2", "alice", chat.ReportTargetUser, "bob", 2000))
	err = e.s.Update(e.ctx, func(tx chat.Tx) error {
		r, err := tx.GetReport(e.ctx, "r2")
		require.NoError(t, err)
		r.State = chat.ReportResolved
		require.NoError(t, tx.UpdateReport(e.ctx, r))
		return boom
	})
	require.ErrorIs(t, err, boom)
	r, err := e.report("r2")
	require.NoError(t, err)
	require.Equal(t, chat.ReportOpen, r.State)
	_, err = writeErr(e, func(tx chat.Tx) (int, error) {
		return 0, tx.CreateReport(e.ctx, newReport("r3", "alice", chat.ReportTargetUser, "bob", 3000))
	})
	requireConflict(t, err, "r2 is still open")
}

// UserMessages pages through every message of one author, deleted ones
// too, in (createdAt, messageId) order, whatever the insertion order.
func testUserMessages(t *testing.T, e *env) {
	purgeFixture(e)
	page := func(after *chat.Message, limit int) []*chat.Message {
		var cur *chat.PurgeCursor
		if after != nil {
			cur = &chat.PurgeCursor{CreatedAt: after.CreatedAt.Time, MessageID: after.MessageID}
		}
		return read(e, func(tx chat.Tx) ([]*chat.Message, error) { return tx.UserMessages(e.ctx, "u", cur, limit) })
	}
	p1 := page(nil, 5)
	require.Equal(t, []string{"m01", "m02", "m03", "m04", "m05"}, messageIDs(p1))
	p2 := page(p1[4], 5)
	require.Equal(t, []string{"m06", "m07", "m08", "m09", "m10"}, messageIDs(p2))
	require.True(t, p2[1].IsDeleted, "deleted messages are included")
	p3 := page(p2[4], 5)
	require.Equal(t, []string{"m11", "m12"}, messageIDs(p3))
	require.Empty(t, page(p3[1], 5))
	require.Len(t, page(nil, 0), 12, "no limit")
	require.Equal(t, "b", p1[2].ChannelID)
	require.Equal(t, "u", p1[2].UserID)
	require.Empty(t, read(e, func(tx chat.Tx) ([]*chat.Message, error) { return tx.UserMessages(e.ctx, "nobody", nil, 5) }))
}

// UserReactions pages through one user's reactions in (messageId, name)
// order and leaves others' out.
func testUserReactions(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.createMessages(newMessage("m1", "c", "x", 1), newMessage("m2", "c", "x", 2))
	e.react(reaction("r1", "m2", "like", "u", 1), reaction("r2", "m1", "wow", "u", 2), reaction("r3", "m1", "like", "u", 3),
		reaction("r4", "m1", "like", "v", 4), reaction("r5", "m2", "angry", "u", 5))
	page := func(after *chat.Reaction, limit int) []string {
		var cur *chat.UserReactionCursor
		if after != nil {
			cur = &chat.UserReactionCursor{MessageID: after.ReferenceID, ReactionName: after.ReactionName}
		}
		rs := read(e, func(tx chat.Tx) ([]*chat.Reaction, error) { return tx.UserReactions(e.ctx, "u", cur, limit) })
		var out []string
		for _, r := range rs {
			require.Equal(t, "u", r.UserID)
			out = append(out, r.ReactionID)
		}
		return out
	}
	require.Equal(t, []string{"r3", "r2"}, page(nil, 2))
	require.Equal(t, []string{"r5", "r1"}, page(&chat.Reaction{ReferenceID: "m1", ReactionName: "wow"}, 2))
	require.Nil(t, page(&chat.Reaction{ReferenceID: "m2", ReactionName: "like"}, 2))
	require.Equal(t, []string{"r3", "r2", "r5", "r1"}, page(nil, 0))
}

// Reporters racing to file the same report: of 8 concurrent creates of
// one reporter and target, exactly one is stored and the others are
// CodeConflict, whatever the store's concurrency.
func testReportConcurrent(t *testing.T, e *env) {
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = e.s.Update(e.ctx, func(tx chat.Tx) error {
				return tx.CreateReport(e.ctx, newReport(fmt.Sprintf("r%d", i), "alice", chat.ReportTargetUser, "bob", int64(i)))
			})
		}()
	}
	close(start)
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		requireConflict(t, err)
	}
	require.Equal(t, 1, ok)
	require.Len(t, e.queryReports(chat.ReportFilter{ReporterID: "alice"}), 1)
}

// Admins racing to resolve one report, each reading it with LockReport and
// resolving it only while it is open, in one Update: exactly one resolves
// it (the others read it resolved), and the stored resolution is the
// winner's.
func testReportConcurrentResolve(t *testing.T, e *env) {
	e.createReports(newReport("r1", "alice", chat.ReportTargetUser, "bob", 1000))
	errAlready := errors.New("already resolved")
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = e.s.Update(e.ctx, func(tx chat.Tx) error {
				r, err := tx.LockReport(e.ctx, "r1")
				if err != nil {
					return err
				}
				if r.State != chat.ReportOpen {
					return errAlready
				}
				r.State, r.ResolvedAt = chat.ReportResolved, atp(2000)
				r.Resolution = &chat.ReportResolution{Action: chat.ResolveDismiss, ActorID: fmt.Sprintf("admin%d", i)}
				return tx.UpdateReport(e.ctx, r)
			})
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "two transactions resolved the report")
			winner = i
			continue
		}
		require.ErrorIs(t, err, errAlready)
	}
	require.NotEqual(t, -1, winner)
	r, err := e.report("r1")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("admin%d", winner), r.Resolution.ActorID)
}
