package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// heldStore holds the function of the first grouped Update after arm
// until release is closed, so that the Updates that follow certainly
// queue behind its transaction.
type heldStore struct {
	*Store
	armed            atomic.Bool
	started, release chan struct{}
}

func (h *heldStore) arm() {
	h.started, h.release = make(chan struct{}), make(chan struct{})
	h.armed.Store(true)
}

func (h *heldStore) Update(ctx context.Context, fn func(chat.Tx) error) error {
	if chat.CommitGroup(ctx) != "" && h.armed.CompareAndSwap(true, false) {
		inner, started, release := fn, h.started, h.release
		var once sync.Once
		fn = func(tx chat.Tx) error {
			once.Do(func() { close(started); <-release })
			return inner(tx)
		}
	}
	return h.Store.Update(ctx, fn)
}

// waiting returns how many Updates wait in the queue of key.
func (s *Store) waiting(key string) int {
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	if q := s.groups.m[s.queue(key)]; q != nil {
		return len(q.waiting)
	}
	return 0
}

// waitQueued waits until n Updates wait in key's group.
func waitQueued(t *testing.T, s *Store, key string, n int) {
	t.Helper()
	for i := 0; s.waiting(key) != n; i++ {
		if i == 60000 {
			t.Fatalf("%d Updates wait in group %q, not %d", s.waiting(key), key, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// groupFixture is a Service over a heldStore with channel c and members
// u0..u(n-1), and the id of an admin.
func groupFixture(t *testing.T, n int) (*heldStore, *chat.Service, string) {
	t.Helper()
	return channelsFixture(t, 0, n, "c")
}

// channelCounts returns the messages of channel c, their distinct
// segments, the distinct transactions that inserted them (xmin) and the
// channel's message counter.
func channelCounts(t *testing.T, s *Store) (msgs, segments, txs, counter int) {
	t.Helper()
	require.NoError(t, s.db.QueryRow(`SELECT count(*), count(DISTINCT channel_segment), count(DISTINCT xmin::text)
		FROM `+s.prefix+`messages WHERE channel_id = 'c'`).Scan(&msgs, &segments, &txs))
	require.NoError(t, s.db.QueryRow(`SELECT message_count FROM `+s.prefix+`channels WHERE channel_id = 'c'`).Scan(&counter))
	return
}

// postHeld posts as u0 with the store's hold armed and returns once that
// post's transaction is running (holding the group of channel c); the
// post's result arrives on the returned channel.
func postHeld(t *testing.T, h *heldStore, svc *chat.Service) chan error {
	t.Helper()
	h.arm()
	done := make(chan error, 1)
	go func() { done <- post(svc, "u0") }()
	<-h.started
	return done
}

// postQueued starts a held post by u0 and n-1 more posts by u1..u(n-1),
// and returns once those wait in the channel's commit group, with the
// held post's outcome and the others' outcomes (in any order).
func postQueued(t *testing.T, h *heldStore, svc *chat.Service, n int) (lead, errs chan error) {
	t.Helper()
	lead = postHeld(t, h, svc)
	errs = make(chan error, n-1)
	for i := 1; i < n; i++ {
		go func() { errs <- post(svc, fmt.Sprintf("u%d", i)) }()
	}
	waitQueued(t, h.Store, "c", n-1)
	return lead, errs
}

func post(svc *chat.Service, user string) error {
	_, err := svc.CreateMessage(context.Background(), user, chat.CreateMessageInput{ChannelID: "c",
		Type: chat.MessageTypeText, Data: chat.TextData("hi from " + user)})
	return err
}

// TestCommitGroupPosts: posts to one channel that arrive while a post to
// it is running share its transaction: one COMMIT for all of them, every
// message inserted by that one transaction with its own segment, and three
// statements between the group's BEGIN and COMMIT: the first post's
// reads, the others' read together, and one write for all.
func TestCommitGroupPosts(t *testing.T) {
	const n = 8
	h, svc, _ := groupFixture(t, n)
	lead, errs := postQueued(t, h, svc, n)
	commits, stmts := h.commits.Load(), h.StatementCount()
	close(h.release)
	require.NoError(t, <-lead)
	for range n - 1 {
		require.NoError(t, <-errs)
	}
	require.Equal(t, int64(1), h.commits.Load()-commits, "one COMMIT for the group")
	require.Equal(t, int64(3), h.StatementCount()-stmts, "the first post's reads, the others' reads, one write")
	msgs, segs, txs, counter := channelCounts(t, h.Store)
	require.Equal(t, []int{n, n, 1, n}, []int{msgs, segs, txs, counter})
	require.Zero(t, h.waiting("c"))
}

// TestCommitGroupRefusedMember: a member refused by the rules (a muted
// author) is answered with its error, and the others commit together.
func TestCommitGroupRefusedMember(t *testing.T) {
	const n = 6
	h, svc, admin := groupFixture(t, n)
	require.NoError(t, svc.MuteUsers(context.Background(), admin, "c", []string{"u3"}, time.Hour))
	lead := postHeld(t, h, svc)
	errs := make([]chan error, n)
	for i := 1; i < n; i++ {
		errs[i] = make(chan error, 1)
		go func() { errs[i] <- post(svc, fmt.Sprintf("u%d", i)) }()
		waitQueued(t, h.Store, "c", i) // in this order
	}
	commits := h.commits.Load()
	close(h.release)
	require.NoError(t, <-lead)
	for i := 1; i < n; i++ {
		err := <-errs[i]
		if i == 3 {
			require.Equal(t, chat.CodeUserMuted, chat.ErrorCode(err), "%v", err)
		} else {
			require.NoError(t, err)
		}
	}
	require.Equal(t, int64(1), h.commits.Load()-commits)
	msgs, segs, txs, counter := channelCounts(t, h.Store)
	require.Equal(t, []int{n - 1, n - 1, 1, n - 1}, []int{msgs, segs, txs, counter})
}

// TestCommitGroupFallback: a member whose statement fails, or whose
// function fails after a write, rolls the group back; every member then
// runs alone: each post commits exactly once, in a transaction of its
// own, and the failed members' writes are gone.
func TestCommitGroupFallback(t *testing.T) {
	for _, name := range []string{"statement", "after write"} {
		t.Run(name, func(t *testing.T) {
			const n = 6
			h, svc, _ := groupFixture(t, n)
			lead := postHeld(t, h, svc)
			errs := make(chan error, n-1)
			for i := 1; i < n; i++ {
				go func() { errs <- post(svc, fmt.Sprintf("u%d", i)) }()
				if i == 2 {
					waitQueued(t, h.Store, "c", i)
					ctx := chat.WithCommitGroup(context.Background(), "c")
					go func() {
						errs <- h.Update(ctx, func(ct chat.Tx) error {
							if name == "statement" {
								_, err := ct.(*tx).exec(ctx, `SELECT 1/0`)
								return err
							}
							now := chat.NewTime(time.Now())
							if err := ct.CreateChannel(ctx, &chat.Channel{ChannelID: "ghost", DisplayName: "ghost",
								CreatedAt: now, UpdatedAt: now}); err != nil {
								return err
							}
							return errors.New("refused after a write")
						})
					}()
					waitQueued(t, h.Store, "c", i+1)
				}
			}
			waitQueued(t, h.Store, "c", n)
			commits := h.commits.Load()
			close(h.release)
			require.NoError(t, <-lead)
			failed := 0
			for range n {
				if err := <-errs; err != nil {
					failed++
					if name == "statement" {
						require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err), "%v", err)
					} else {
						require.EqualError(t, err, "refused after a write")
					}
				}
			}
			require.Equal(t, 1, failed)
			require.Equal(t, int64(n), h.commits.Load()-commits, "every post alone")
			msgs, segs, txs, counter := channelCounts(t, h.Store)
			require.Equal(t, []int{n, n, n, n}, []int{msgs, segs, txs, counter})
			var ghosts int
			require.NoError(t, h.db.QueryRow(`SELECT count(*) FROM `+h.prefix+`channels WHERE channel_id = 'ghost'`).Scan(&ghosts))
			require.Zero(t, ghosts)
		})
	}
}

// TestCommitGroupCancelled: a member whose context ends while it waits
// in the queue leaves it at once, and one whose context ends after the
// leader took it but before its turn, is answered with the cancellation;
// neither runs, and the others commit together.
func TestCommitGroupCancelled(t *testing.T) {
	s := relayStores(t, 1)[0]
	bg := chat.WithCommitGroup(context.Background(), "k")
	write := func(ctx context.Context, ct chat.Tx, id string) error {
		now := chat.NewTime(time.Now())
		return ct.CreateChannel(ctx, &chat.Channel{ChannelID: id, DisplayName: id, CreatedAt: now, UpdatedAt: now})
	}
	// held starts an Update whose function, once started, waits for
	// release and then writes channel id.
	held := func(id string) (started, release chan struct{}, errc chan error) {
		started, release, errc = make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			errc <- s.Update(bg, func(ct chat.Tx) error {
				close(started)
				<-release
				return write(bg, ct, id)
			})
		}()
		return started, release, errc
	}
	var ranA, ranC atomic.Bool
	started, release, leader := held("L")
	<-started

	// A waits in the queue and is cancelled there.
	ctxA, cancelA := context.WithCancel(bg)
	errA := make(chan error, 1)
	go func() { errA <- s.Update(ctxA, func(chat.Tx) error { ranA.Store(true); return nil }) }()
	waitQueued(t, s, "k", 1)
	cancelA()
	err := <-errA
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, chat.CodeUnavailable, chat.ErrorCode(err))
	require.Zero(t, s.waiting("k"))

	// B and C are taken together; C is cancelled while B runs.
	bStarted, bRelease, errB := held("B")
	waitQueued(t, s, "k", 1)
	ctxC, cancelC := context.WithCancel(bg)
	errC := make(chan error, 1)
	go func() { errC <- s.Update(ctxC, func(chat.Tx) error { ranC.Store(true); return nil }) }()
	waitQueued(t, s, "k", 2)
	commits := s.commits.Load()
	close(release)
	<-bStarted
	require.Zero(t, s.waiting("k"), "B and C taken")
	cancelC()
	close(bRelease)
	require.NoError(t, <-leader)
	require.NoError(t, <-errB)
	require.ErrorIs(t, <-errC, context.Canceled)
	require.False(t, ranA.Load())
	require.False(t, ranC.Load())
	require.Equal(t, int64(1), s.commits.Load()-commits)
	var n int
	require.NoError(t, s.db.QueryRow(`SELECT count(DISTINCT xmin::text) FROM `+s.prefix+`channels WHERE channel_id IN ('L', 'B')`).Scan(&n))
	require.Equal(t, 1, n)
}

// TestWrites: the statements of a post's reads may not write; its
// writes and every statement not a SELECT may.
func TestWrites(t *testing.T) {
	for _, q := range []string{prefetchUpdateSQL, prefetchViewSQL, `SELECT 1 FROM {s}channels WHERE channel_id = $1 FOR NO KEY UPDATE`,
		`SELECT updated_at, is_deleted FROM {s}messages`} {
		require.False(t, writes(q), q)
	}
	require.False(t, writes(groupPrefetchSQL))
	for _, q := range []string{appendSQL, appendWithEventsSQL, appendWithDeliveriesSQL, appendEventsSQL, enqueueSQL,
		groupAppendSQL, groupAppendWithDeliveriesSQL,
		`UPDATE {s}users SET x = 1`, `DELETE FROM {s}events`, `SELECT pg_notify($1, '')`, `SELECT nextval('s')`,
		`WITH d AS (DELETE FROM {s}x RETURNING 1) SELECT * FROM d`} {
		require.True(t, writes(q), q)
	}
}

// TestCommitGroupPanic: a member whose function panics panics in its own
// goroutine; the group is rolled back and the others commit alone.
func TestCommitGroupPanic(t *testing.T) {
	const n = 4
	h, svc, _ := groupFixture(t, n)
	lead, errs := postQueued(t, h, svc, n)
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_ = h.Update(chat.WithCommitGroup(context.Background(), "c"), func(chat.Tx) error { panic("member panic") })
	}()
	waitQueued(t, h.Store, "c", n)
	close(h.release)
	require.Equal(t, "member panic", <-panicked)
	require.NoError(t, <-lead)
	for range n - 1 {
		require.NoError(t, <-errs)
	}
	msgs, segs, txs, counter := channelCounts(t, h.Store)
	require.Equal(t, []int{n, n, n, n}, []int{msgs, segs, txs, counter})
}

// postConcurrently runs posters goroutines that each post each times
// (post(i, k): the kth post of the ith) and counts the posts that
// succeeded and those refused because the author is muted; any other
// error fails the test.
func postConcurrently(t *testing.T, posters, each int, post func(i, k int) error) (ok, refused *atomic.Int64) {
	ok, refused = new(atomic.Int64), new(atomic.Int64)
	var wg sync.WaitGroup
	for i := range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				switch err := post(i, k); {
				case err == nil:
					ok.Add(1)
				case chat.ErrorCode(err) == chat.CodeUserMuted:
					refused.Add(1)
				default:
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	return ok, refused
}

// TestCommitGroupConcurrentPosts: many posters to one channel, some of
// them muted, without a held leader: every post that succeeded is stored
// once, with its own segment, and the channel's counter matches.
func TestCommitGroupConcurrentPosts(t *testing.T) {
	const posters, each = 12, 10
	h, svc, admin := groupFixture(t, posters)
	require.NoError(t, svc.MuteUsers(context.Background(), admin, "c", []string{"u5", "u7"}, time.Hour))
	ok, refused := postConcurrently(t, posters, each, func(i, _ int) error { return post(svc, fmt.Sprintf("u%d", i)) })
	require.Equal(t, int64(2*each), refused.Load())
	msgs, segs, _, counter := channelCounts(t, h.Store)
	require.Equal(t, []int{int(ok.Load()), int(ok.Load()), int(ok.Load())}, []int{msgs, segs, counter})
	require.Zero(t, h.waiting("c"))
}

// channelsFixture is a Service over a heldStore with the given number of
// commit group queues (0: the default), and channels named chans, each
// with members u0..u(n-1), and the id of an admin.
func channelsFixture(t *testing.T, queues, n int, chans ...string) (*heldStore, *chat.Service, string) {
	t.Helper()
	ctx := context.Background()
	h := &heldStore{Store: relayStores(t, 1)[0]}
	h.opt.CommitGroups = queues
	svc, err := chat.New(ctx, h, chat.Config{})
	require.NoError(t, err)
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("u%d", i))
	}
	for _, c := range chans {
		_, err = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: c, Type: chat.ChannelTypeStandard, UserIDs: ids})
		require.NoError(t, err)
	}
	return h, svc, admin.UserID
}

func postTo(svc *chat.Service, channelID, user string) error {
	_, err := svc.CreateMessage(context.Background(), user, chat.CreateMessageInput{ChannelID: channelID,
		Type: chat.MessageTypeText, Data: chat.TextData("hi from " + user)})
	return err
}

// TestCommitGroupAcrossChannels: with one queue, posts to other channels
// that arrive while a post runs share its transaction when their channel
// is one it ran or is not below the greatest one it ran; they run in the
// order of their channels, and a post to a channel below that waits for
// the next transaction, so every group takes its channels' locks in
// ascending order.
func TestCommitGroupAcrossChannels(t *testing.T) {
	h, svc, _ := channelsFixture(t, 1, 5, "a", "m", "n", "z")
	h.arm()
	lead := make(chan error, 1)
	go func() { lead <- postTo(svc, "m", "u0") }()
	<-h.started
	errs := make(chan error, 4)
	for i, c := range []string{"z", "a", "n", "m"} {
		go func() { errs <- postTo(svc, c, fmt.Sprintf("u%d", i+1)) }()
		waitQueued(t, h.Store, "m", i+1) // in this order
	}
	commits := h.commits.Load()
	close(h.release)
	require.NoError(t, <-lead)
	for range 4 {
		require.NoError(t, <-errs)
	}
	require.Equal(t, int64(2), h.commits.Load()-commits, "m, m, n and z together, then a")
	txOf := map[string]string{}
	rows, err := h.db.Query(`SELECT channel_id, xmin::text FROM ` + h.prefix + `messages`)
	require.NoError(t, err)
	for rows.Next() {
		var c, x string
		require.NoError(t, rows.Scan(&c, &x))
		if prev, ok := txOf[c]; ok {
			require.Equal(t, prev, x, "channel %s", c)
		}
		txOf[c] = x
	}
	require.NoError(t, rows.Err())
	require.Len(t, txOf, 4)
	require.Equal(t, txOf["m"], txOf["n"])
	require.Equal(t, txOf["m"], txOf["z"])
	require.NotEqual(t, txOf["m"], txOf["a"])
	// The events of the posts, in the order the posts ran.
	var order []string
	for i := 0; len(order) < 5; i++ {
		require.Less(t, i, 10000, "the relay moved %v", order)
		time.Sleep(time.Millisecond)
		order = column(t, h, `SELECT channel_id FROM `+h.prefix+`events WHERE name = 'message.didCreate' ORDER BY id`)
	}
	require.Equal(t, []string{"m", "m", "n", "z", "a"}, order)
}

// TestCommitGroupsPerKey: with a negative number of queues every key has
// its own: a post to another channel does not wait for a running post.
func TestCommitGroupsPerKey(t *testing.T) {
	h, svc, _ := channelsFixture(t, -1, 2, "m", "z")
	h.arm()
	lead := make(chan error, 1)
	go func() { lead <- postTo(svc, "m", "u0") }()
	<-h.started
	require.NoError(t, postTo(svc, "z", "u1"), "while the post to m is held")
	close(h.release)
	require.NoError(t, <-lead)
}

// TestCommitGroupConcurrentChannels: posters to several channels that
// share two queues, some of them muted in some channels, without a held
// leader: every post that succeeded is stored once, with its own segment
// of its channel, and every channel's counter matches.
func TestCommitGroupConcurrentChannels(t *testing.T) {
	const posters, each = 12, 10
	chans := []string{"c0", "c1", "c2", "c3", "c4", "c5"}
	h, svc, admin := channelsFixture(t, 2, posters, chans...)
	require.NoError(t, svc.MuteUsers(context.Background(), admin, "c1", []string{"u5"}, time.Hour))
	ok, refused := postConcurrently(t, posters, each, func(i, k int) error {
		return postTo(svc, chans[(i+k)%len(chans)], fmt.Sprintf("u%d", i))
	})
	require.Positive(t, refused.Load())
	require.Equal(t, int64(posters*each), ok.Load()+refused.Load())
	requireCounts(t, h.Store, int(ok.Load()))
	require.Zero(t, h.waiting("c0")+h.waiting("c1"))
}

// writesFixture is a heldStore with one commit group queue and channels
// chans.
func writesFixture(t *testing.T, chans ...string) *heldStore {
	t.Helper()
	ctx := context.Background()
	h := &heldStore{Store: relayStores(t, 1)[0]}
	h.opt.CommitGroups = 1
	require.NoError(t, h.Update(ctx, func(tx chat.Tx) error {
		now := chat.NewTime(time.Now())
		for _, c := range chans {
			if err := tx.CreateChannel(ctx, &chat.Channel{ChannelID: c, Type: chat.ChannelTypeStandard,
				DisplayName: c, CreatedAt: now, UpdatedAt: now, LastActivity: now}); err != nil {
				return err
			}
		}
		return nil
	}))
	return h
}

// richMessage is a message with every column the post writes set.
func richMessage(id, channelID string) *chat.Message {
	at := chat.NewTime(time.Date(2026, 5, 1, 10, 0, 0, 123_456_789, time.UTC))
	edited := chat.NewTime(at.Add(time.Minute))
	return &chat.Message{MessageID: id, ChannelID: channelID, UserID: "u", Type: chat.MessageTypeText,
		Data: map[string]any{"text": "Héllo <b>wörld</b> \"quoted\" \\ 日本", "nested": map[string]any{"k": []any{1.5, true, nil}}},
		Tags: []string{"x", "y,z"}, CreatedAt: at, UpdatedAt: at, EditedAt: &edited, FlagCount: 2,
		Hashflag:  chat.Hashflag{Bits: 8, Hashes: 2, Hash: []uint32{7, 4294967295}},
		Reactions: map[string]int{"like": 2, "héart": 1}, ReactionsCount: 3}
}

// postBody is what the Service's post does in its Update: the post's
// reads, AppendMessage, the deliveries dels and the event.
func postBody(ctx context.Context, tx chat.Tx, m *chat.Message, dels ...*chat.Delivery) error {
	if err := tx.(chat.PostPrefetcher).PrefetchPost(ctx, m.ChannelID, m.UserID); err != nil {
		return err
	}
	now := chat.NewTime(time.Now())
	if _, err := tx.(chat.MessageAppender).AppendMessage(ctx, m, now.Time); err != nil {
		return err
	}
	if err := tx.EnqueueDeliveries(ctx, dels); err != nil {
		return err
	}
	return tx.AppendEvents(ctx, []*chat.Event{{Name: chat.EventMessageDidCreate, ChannelID: m.ChannelID,
		UserIDs: []string{"u"}, Data: []byte(`{"id":"` + m.MessageID + `"}`), CreatedAt: now}})
}

// postAs posts m as the Service does, under m's channel as commit group
// key, announcing its reads.
func postAs(h *heldStore, m *chat.Message) error {
	ctx := chat.WithPostReads(chat.WithCommitGroup(context.Background(), m.ChannelID), m.ChannelID, m.UserID)
	return h.Update(ctx, func(tx chat.Tx) error { return postBody(ctx, tx, m) })
}

// heldGroupPosts posts ms[0] with the store's hold armed, then the others
// once it runs, each queued in that order, and returns the outcomes in
// the order of ms after releasing the hold.
func heldGroupPosts(t *testing.T, h *heldStore, ms ...*chat.Message) []error {
	t.Helper()
	return heldGroupPostsWith(t, h, nil, ms...)
}

// heldGroupPostsWith is heldGroupPosts with dels[i] the deliveries of
// ms[i] (dels may be short).
func heldGroupPostsWith(t *testing.T, h *heldStore, dels [][]*chat.Delivery, ms ...*chat.Message) []error {
	t.Helper()
	reads := make([][2]string, len(ms))
	fns := make([]func(context.Context, chat.Tx) error, len(ms))
	for i, m := range ms {
		var ds []*chat.Delivery
		if i < len(dels) {
			ds = dels[i]
		}
		reads[i] = [2]string{m.ChannelID, m.UserID}
		fns[i] = func(ctx context.Context, tx chat.Tx) error { return postBody(ctx, tx, m, ds...) }
	}
	return heldUpdates(t, h, reads, fns...)
}

// column returns the first column of the rows of a query.
func column(t *testing.T, h *heldStore, q string) []string {
	t.Helper()
	rows, err := h.db.Query(q)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestCommitGroupWrites: posts to several channels in one group write
// their messages and events with one statement, and store exactly the
// rows a post alone stores.
func TestCommitGroupWrites(t *testing.T) {
	h := writesFixture(t, "a", "b", "c", "solo")
	commits, stmts := h.commits.Load(), h.StatementCount()
	errs := heldGroupPosts(t, h, richMessage("ma", "a"), richMessage("mb", "b"), richMessage("mc", "c"))
	require.Equal(t, []error{nil, nil, nil}, errs)
	require.Equal(t, int64(1), h.commits.Load()-commits)
	require.Equal(t, int64(3), h.StatementCount()-stmts, "a's reads, b's and c's read together, one write")
	require.NoError(t, postAs(h, richMessage("solo", "solo")))

	row := func(id string) string {
		var s string
		require.NoError(t, h.db.QueryRow(`SELECT (to_jsonb(m) - 'message_id' - 'channel_id')::text FROM `+h.prefix+`messages m
			WHERE message_id = $1`, id).Scan(&s))
		return s
	}
	want := row("solo")
	require.Contains(t, want, `'日本'`, "the search words")
	for _, id := range []string{"ma", "mb", "mc"} {
		require.Equal(t, want, row(id), id)
	}
	var events int
	require.NoError(t, h.db.QueryRow(`SELECT count(*) FROM `+h.prefix+`events_pending`).Scan(&events))
	for i := 0; events > 0; i++ {
		require.Less(t, i, 10000, "events left pending")
		time.Sleep(time.Millisecond)
		require.NoError(t, h.db.QueryRow(`SELECT count(*) FROM `+h.prefix+`events_pending`).Scan(&events))
	}
	got := column(t, h, `SELECT channel_id || ' ' || convert_from(data, 'UTF8') FROM `+h.prefix+`events ORDER BY id`)
	require.Equal(t, []string{`a {"id":"ma"}`, `b {"id":"mb"}`, `c {"id":"mc"}`, `solo {"id":"solo"}`}, got)
	for _, c := range []string{"a", "b", "c", "solo"} {
		var n int
		require.NoError(t, h.db.QueryRow(`SELECT message_count FROM `+h.prefix+`channels WHERE channel_id = $1`, c).Scan(&n))
		require.Equal(t, 1, n, c)
	}
}

// TestCommitGroupWritesDeliveries: the posts' webhook deliveries are
// written with their messages, in the one statement, pending or not as
// enqueued; a post without deliveries may share it.
func TestCommitGroupWritesDeliveries(t *testing.T) {
	h := writesFixture(t, "a", "b", "c", "d")
	now := chat.NewTime(time.Now())
	del := func(id, state string) *chat.Delivery {
		return &chat.Delivery{RequestID: id, WebhookID: "w", Event: chat.EventMessageDidCreate, Body: []byte(`{"id":"` + id + `"}`),
			State: state, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
	}
	stmts := h.StatementCount()
	errs := heldGroupPostsWith(t, h, [][]*chat.Delivery{
		{del("da", chat.DeliveryPending)},
		{del("db1", chat.DeliveryPending), del("db2", chat.DeliveryFailed)},
		nil,
		{del("dd", chat.DeliveryPending)},
	}, richMessage("ma", "a"), richMessage("mb", "b"), richMessage("mc", "c"), richMessage("md", "d"))
	require.Equal(t, []error{nil, nil, nil, nil}, errs)
	require.Equal(t, int64(3), h.StatementCount()-stmts, "a's reads, the others' reads ahead, one write")
	got := column(t, h, `SELECT request_id || ' ' || state || ' ' || convert_from(body, 'UTF8') FROM `+h.prefix+`deliveries ORDER BY request_id`)
	require.Equal(t, []string{`da pending {"id":"da"}`, `db1 pending {"id":"db1"}`, `db2 failed {"id":"db2"}`, `dd pending {"id":"dd"}`}, got)
	var msgs int
	require.NoError(t, h.db.QueryRow(`SELECT count(*) FROM `+h.prefix+`messages`).Scan(&msgs))
	require.Equal(t, 4, msgs)

	// A delivery id that exists: the group falls back, and that post
	// alone is refused.
	errs = heldGroupPostsWith(t, h, [][]*chat.Delivery{nil, {del("new", chat.DeliveryPending)}, {del("da", chat.DeliveryPending)}},
		richMessage("ma2", "a"), richMessage("mb2", "b"), richMessage("mc2", "c"))
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, chat.CodeConflict, chat.ErrorCode(errs[2]), "%v", errs[2])
	require.NoError(t, h.db.QueryRow(`SELECT count(*) FROM `+h.prefix+`messages`).Scan(&msgs))
	require.Equal(t, 6, msgs)
}

// TestCommitGroupWritesFail: when the group's write fails (two posts
// with one message id), the group is rolled back and every post runs
// alone: one of the two is refused as a conflict, the others commit.
func TestCommitGroupWritesFail(t *testing.T) {
	h := writesFixture(t, "a", "b", "c")
	commits := h.commits.Load()
	errs := heldGroupPosts(t, h, richMessage("ma", "a"), richMessage("dup", "b"), richMessage("dup", "c"))
	require.NoError(t, errs[0])
	require.True(t, (errs[1] == nil) != (errs[2] == nil), "%v", errs)
	winner := "b"
	for _, err := range errs[1:] {
		if err != nil {
			require.Equal(t, chat.CodeConflict, chat.ErrorCode(err), "%v", err)
		}
	}
	if errs[1] != nil {
		winner = "c"
	}
	require.Equal(t, int64(2), h.commits.Load()-commits, "ma and the winner, each alone")
	var ch string
	require.NoError(t, h.db.QueryRow(`SELECT channel_id FROM `+h.prefix+`messages WHERE message_id = 'dup'`).Scan(&ch))
	require.Equal(t, winner, ch)
	var n int
	require.NoError(t, h.db.QueryRow(`SELECT count(*) FROM `+h.prefix+`messages`).Scan(&n))
	require.Equal(t, 2, n)
}

// readsFixture is writesFixture with users u and nobody, u a member of
// every channel.
func readsFixture(t *testing.T, chans ...string) *heldStore {
	t.Helper()
	h := writesFixture(t, chans...)
	ctx := context.Background()
	require.NoError(t, h.Update(ctx, func(tx chat.Tx) error {
		if _, err := tx.EnsureUsers(ctx, []string{"u", "nobody"}, time.Now()); err != nil {
			return err
		}
		for _, c := range chans {
			now := chat.NewTime(time.Now())
			if err := tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: c, UserID: "u", Membership: chat.MembershipMember,
				CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
		}
		return nil
	}))
	return h
}

// postReadsOf is what a post's rules read, with the errors' codes.
type postReadsOf struct {
	u      *chat.User
	cu     *chat.ChannelUser
	c      *chat.Channel
	rv, wv int64
	codes  [3]chat.Code
}

func readPost(ctx context.Context, tx chat.Tx, channelID, userID string) postReadsOf {
	var r postReadsOf
	var errs [3]error
	r.u, errs[0] = tx.GetUser(ctx, userID)
	r.cu, errs[1] = tx.GetChannelUser(ctx, channelID, userID)
	r.c, errs[2] = tx.GetChannel(ctx, channelID)
	r.rv, _ = tx.RulesVersion(ctx)
	r.wv, _ = tx.WebhooksVersion(ctx)
	for i, err := range errs {
		r.codes[i] = chat.ErrorCode(err)
	}
	return r
}

// heldUpdates runs fns[0] with the store's hold armed, then the others,
// queued in that order, each under the channel of its reads as key and
// announcing a post's reads (channel, user), and returns their errors
// after releasing the hold.
func heldUpdates(t *testing.T, h *heldStore, reads [][2]string, fns ...func(context.Context, chat.Tx) error) []error {
	t.Helper()
	h.arm()
	done := make([]chan error, len(fns))
	for i, fn := range fns {
		done[i] = make(chan error, 1)
		ctx := chat.WithPostReads(chat.WithCommitGroup(context.Background(), reads[i][0]), reads[i][0], reads[i][1])
		go func() { done[i] <- h.Update(ctx, func(tx chat.Tx) error { return fn(ctx, tx) }) }()
		if i == 0 {
			<-h.started
		} else {
			waitQueued(t, h.Store, reads[0][0], i)
		}
	}
	close(h.release)
	errs := make([]error, len(fns))
	for i := range fns {
		errs[i] = <-done[i]
	}
	return errs
}

// TestCommitGroupReadAhead: the posts queued behind a running one have
// their reads made together, in one statement, and what each post's rules
// read from them equals what the reads themselves give, for a member, a
// user without a relation and a missing channel.
func TestCommitGroupReadAhead(t *testing.T) {
	h := readsFixture(t, "a", "b", "c")
	ctx := context.Background()
	cases := []struct{ channelID, userID string }{{"b", "u"}, {"c", "nobody"}, {"nowhere", "u"}}
	want := make([]postReadsOf, len(cases))
	for i, k := range cases {
		require.NoError(t, h.Update(ctx, func(tx chat.Tx) error {
			want[i] = readPost(ctx, tx, k.channelID, k.userID)
			return nil
		}))
	}
	got := make([]postReadsOf, len(cases))
	stmts := make([]int64, len(cases))
	planMode := func(ctx context.Context, ct chat.Tx) string {
		var mode string
		require.NoError(t, ct.(*tx).tx.QueryRowContext(ctx, `SELECT current_setting('plan_cache_mode')`).Scan(&mode))
		return mode
	}
	var modes []string
	fns := []func(context.Context, chat.Tx) error{func(ctx context.Context, tx chat.Tx) error {
		modes = append(modes, planMode(ctx, tx))
		return tx.(chat.PostPrefetcher).PrefetchPost(ctx, "a", "u")
	}}
	reads := [][2]string{{"a", "u"}}
	for i, k := range cases {
		reads = append(reads, [2]string{k.channelID, k.userID})
		fns = append(fns, func(ctx context.Context, tx chat.Tx) error {
			n0 := h.StatementCount()
			if err := tx.(chat.PostPrefetcher).PrefetchPost(ctx, k.channelID, k.userID); err != nil {
				return err
			}
			got[i] = readPost(ctx, tx, k.channelID, k.userID)
			stmts[i] = h.StatementCount() - n0
			modes = append(modes, planMode(ctx, tx))
			return nil
		})
	}
	total := h.StatementCount()
	require.Equal(t, []error{nil, nil, nil, nil}, heldUpdates(t, h, reads, fns...))
	require.Equal(t, want, got)
	// Every PrefetchPost is served from the reads ahead; a relation
	// found missing is read again (as after PrefetchPost alone), which
	// makes the channel's read run too.
	require.Equal(t, []int64{0, 2, 2}, stmts)
	require.Equal(t, int64(1+1+4), h.StatementCount()-total, "a's reads, the reads ahead, the relations found missing")
	// Generic plans from the first statement over several posts on.
	require.Equal(t, []string{"auto", "force_generic_plan", "force_generic_plan", "force_generic_plan"}, modes)
	require.NoError(t, h.Update(ctx, func(ct chat.Tx) error {
		require.Equal(t, "auto", planMode(ctx, ct), "in the next transaction")
		return nil
	}))
}

// TestCommitGroupReadAheadStale: a member's write to a table the rows
// read ahead come from makes the members after it read their own rows.
func TestCommitGroupReadAheadStale(t *testing.T) {
	h := readsFixture(t, "a", "b", "c")
	var name string
	var stmts int64
	errs := heldUpdates(t, h, [][2]string{{"a", "u"}, {"b", "u"}, {"c", "u"}},
		func(ctx context.Context, tx chat.Tx) error {
			return tx.(chat.PostPrefetcher).PrefetchPost(ctx, "a", "u")
		},
		func(ctx context.Context, tx chat.Tx) error {
			if err := tx.(chat.PostPrefetcher).PrefetchPost(ctx, "b", "u"); err != nil {
				return err
			}
			c, err := tx.GetChannel(ctx, "c")
			if err != nil {
				return err
			}
			c.DisplayName = "renamed"
			return tx.UpdateChannel(ctx, c)
		},
		func(ctx context.Context, tx chat.Tx) error {
			n0 := h.StatementCount()
			if err := tx.(chat.PostPrefetcher).PrefetchPost(ctx, "c", "u"); err != nil {
				return err
			}
			c, err := tx.GetChannel(ctx, "c")
			if err != nil {
				return err
			}
			name, stmts = c.DisplayName, h.StatementCount()-n0
			return nil
		})
	require.Equal(t, []error{nil, nil, nil}, errs)
	require.Equal(t, "renamed", name)
	require.Equal(t, int64(1), stmts, "c's reads run again")
}

// TestCommitGroupTwoProcesses: two stores on one schema (two processes)
// whose posters post to the same channels at once: every post is stored
// once, with its own segment of its channel, and every counter matches.
func TestCommitGroupTwoProcesses(t *testing.T) {
	const posters, each = 6, 10
	ctx := context.Background()
	stores := relayStores(t, 2)
	chans := []string{"c0", "c1", "c2", "c3", "c4"}
	var svcs []*chat.Service
	for i, s := range stores {
		s.opt.CommitGroups = 1 + i
		svc, err := chat.New(ctx, s, chat.Config{})
		require.NoError(t, err)
		svcs = append(svcs, svc)
	}
	admin, _, err := svcs[0].CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	var ids []string
	for i := range posters {
		ids = append(ids, fmt.Sprintf("u%d", i))
	}
	for _, c := range chans {
		_, err = svcs[0].CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: c, Type: chat.ChannelTypeStandard, UserIDs: ids})
		require.NoError(t, err)
	}
	ok, refused := postConcurrently(t, 2*posters, each, func(i, k int) error {
		// Posters of both processes, each going round the channels from
		// its own start.
		return postTo(svcs[i%2], chans[(i+k)%len(chans)], fmt.Sprintf("u%d", i/2))
	})
	require.Zero(t, refused.Load())
	require.Equal(t, int64(2*posters*each), ok.Load())
	requireCounts(t, stores[0], 2*posters*each)
}

// requireCounts checks that s holds msgs messages and that every
// channel's counter equals its messages and their distinct segments.
func requireCounts(t *testing.T, s *Store, msgs int) {
	t.Helper()
	var n, bad int
	require.NoError(t, s.db.QueryRow(`SELECT count(*) FROM `+s.prefix+`messages`).Scan(&n))
	require.Equal(t, msgs, n)
	require.NoError(t, s.db.QueryRow(`SELECT count(*) FROM `+s.prefix+`channels c
		WHERE c.message_count <> (SELECT count(DISTINCT channel_segment) FROM `+s.prefix+`messages m WHERE m.channel_id = c.channel_id)
		OR (SELECT count(*) FROM `+s.prefix+`messages m WHERE m.channel_id = c.channel_id) <> c.message_count`).Scan(&bad))
	require.Zero(t, bad)
}

// channelSeen is what a post's rules read of its channel in a group.
type channelSeen struct {
	name     string
	count    int64
	activity time.Time
	stmts    int64 // statements the post's reads ran
}

// postSeeing is postBody at now that records in seen what the post's
// rules read of its channel after PrefetchPost.
func postSeeing(h *heldStore, m *chat.Message, now time.Time, seen *channelSeen) func(context.Context, chat.Tx) error {
	return func(ctx context.Context, tx chat.Tx) error {
		n0 := h.StatementCount()
		if err := tx.(chat.PostPrefetcher).PrefetchPost(ctx, m.ChannelID, m.UserID); err != nil {
			return err
		}
		c, err := tx.GetChannel(ctx, m.ChannelID)
		if err != nil {
			return err
		}
		*seen = channelSeen{name: c.DisplayName, count: c.MessageCount, activity: c.LastActivity.Time, stmts: h.StatementCount() - n0}
		if _, err := tx.(chat.MessageAppender).AppendMessage(ctx, m, now); err != nil {
			return err
		}
		return tx.AppendEvents(ctx, []*chat.Event{{Name: chat.EventMessageDidCreate, ChannelID: m.ChannelID,
			UserIDs: []string{"u"}, Data: []byte(`{"id":"` + m.MessageID + `"}`), CreatedAt: chat.NewTime(now)}})
	}
}

// channelRow returns a channel's counter, activity and update times.
func channelRow(t *testing.T, h *heldStore, id string) (count int64, activity, updated time.Time) {
	t.Helper()
	require.NoError(t, h.db.QueryRow(`SELECT message_count, last_activity, updated_at FROM `+h.prefix+`channels
		WHERE channel_id = $1`, id).Scan(&count, &activity, &updated))
	return
}

// TestCommitGroupOneChannel: posts to one channel in one group read the
// channel as the posts before them left it without reading it again (the
// first post's reads, the others' read together, one write), and store
// exactly the rows that the same posts one after the other store: the
// same messages with consecutive segments, the channel's counter and the
// last post's activity time, and the events in the posts' order.
func TestCommitGroupOneChannel(t *testing.T) {
	h := readsFixture(t, "a", "solo")
	base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	const n = 4
	reads := make([][2]string, n)
	fns := make([]func(context.Context, chat.Tx) error, n)
	seen := make([]channelSeen, n)
	for i := range n {
		m := richMessage(fmt.Sprintf("a%d", i), "a")
		reads[i] = [2]string{"a", "u"}
		fns[i] = postSeeing(h, m, base.Add(time.Duration(i)*time.Second), &seen[i])
	}
	commits, stmts := h.commits.Load(), h.StatementCount()
	require.Equal(t, []error{nil, nil, nil, nil}, heldUpdates(t, h, reads, fns...))
	require.Equal(t, int64(1), h.commits.Load()-commits)
	require.Equal(t, int64(3), h.StatementCount()-stmts, "a0's reads, the others' read together, one write")
	for i, s := range seen {
		require.Equal(t, int64(i), s.count, "post %d sees the posts before it", i)
		if i > 0 {
			require.Equal(t, base.Add(time.Duration(i-1)*time.Second), s.activity.UTC(), "post %d", i)
		}
	}
	for i := range n {
		require.NoError(t, postAs(h, richMessage(fmt.Sprintf("solo%d", i), "solo")))
	}
	row := func(id string) string {
		var s string
		require.NoError(t, h.db.QueryRow(`SELECT (to_jsonb(m) - 'message_id' - 'channel_id')::text FROM `+h.prefix+`messages m
			WHERE message_id = $1`, id).Scan(&s))
		return s
	}
	for i := range n {
		require.Equal(t, row(fmt.Sprintf("solo%d", i)), row(fmt.Sprintf("a%d", i)), "segment %d", i+1)
	}
	count, activity, updated := channelRow(t, h, "a")
	require.Equal(t, int64(n), count)
	require.Equal(t, base.Add((n-1)*time.Second), activity.UTC(), "the last post's")
	require.Equal(t, activity, updated)
	var order []string
	for i := 0; len(order) < 2*n; i++ {
		require.Less(t, i, 10000, "the relay moved %v", order)
		time.Sleep(time.Millisecond)
		order = column(t, h, `SELECT convert_from(data, 'UTF8') FROM `+h.prefix+`events ORDER BY id`)
	}
	require.Equal(t, []string{`{"id":"a0"}`, `{"id":"a1"}`, `{"id":"a2"}`, `{"id":"a3"}`}, order[:n])
}

// TestCommitGroupOneChannelWrittenAtOnce: in a group of posts to one
// channel, a post whose message is written at once (it mentions a user)
// writes the posts waiting before it and leaves the channel as its
// statement returned it; a member's write to the channel makes the post
// after it read the channel again. Each post reads the channel as the
// members before it left it, and the group stores every message with its
// own segment.
func TestCommitGroupOneChannelWrittenAtOnce(t *testing.T) {
	h := readsFixture(t, "a")
	base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	msg := func(i int) *chat.Message {
		m := richMessage(fmt.Sprintf("a%d", i), "a")
		if i == 1 {
			m.MentionedUserIDs = []string{"nobody"}
		}
		return m
	}
	seen := make([]channelSeen, 5)
	fns := []func(context.Context, chat.Tx) error{
		postSeeing(h, msg(0), base, &seen[0]),
		postSeeing(h, msg(1), base.Add(time.Second), &seen[1]),
		postSeeing(h, msg(2), base.Add(2*time.Second), &seen[2]),
		func(ctx context.Context, tx chat.Tx) error {
			if err := postSeeing(h, msg(3), base.Add(3*time.Second), &seen[3])(ctx, tx); err != nil {
				return err
			}
			c, err := tx.GetChannel(ctx, "a")
			if err != nil {
				return err
			}
			c.DisplayName = "renamed"
			return tx.UpdateChannel(ctx, c)
		},
		postSeeing(h, msg(4), base.Add(4*time.Second), &seen[4]),
	}
	reads := [][2]string{{"a", "u"}, {"a", "u"}, {"a", "u"}, {"a", "u"}, {"a", "u"}}
	commits := h.commits.Load()
	require.Equal(t, []error{nil, nil, nil, nil, nil}, heldUpdates(t, h, reads, fns...))
	require.Equal(t, int64(1), h.commits.Load()-commits)
	for i, s := range seen {
		require.Equal(t, int64(i), s.count, "post %d sees the posts before it", i)
		if i > 0 {
			require.Equal(t, base.Add(time.Duration(i-1)*time.Second), s.activity.UTC(), "post %d", i)
		}
	}
	require.Equal(t, int64(0), seen[2].stmts, "a2's reads served after a1's write")
	require.Equal(t, "renamed", seen[4].name)
	require.Equal(t, int64(1), seen[4].stmts, "a4 reads the channel again")
	segs := column(t, h, `SELECT message_id || ' ' || channel_segment FROM `+h.prefix+`messages ORDER BY channel_segment`)
	require.Equal(t, []string{"a0 1", "a1 2", "a2 3", "a3 4", "a4 5"}, segs)
	require.Equal(t, []string{"nobody a1 2"}, column(t, h, `SELECT user_id || ' ' || message_id || ' ' || channel_segment FROM `+
		h.prefix+`message_mentions`))
	count, activity, _ := channelRow(t, h, "a")
	require.Equal(t, int64(5), count)
	require.Equal(t, base.Add(4*time.Second), activity.UTC())
}
