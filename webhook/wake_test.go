package webhook

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/stream"
)

// countingStore counts the transactions run through it, by operation
// name (chat.Operation) and kind ("lazy update" for an Update under
// chat.WithLazyCommit), and passes the store's commit signals through.
type countingStore struct {
	chat.Store
	mu     sync.Mutex
	counts map[string]int
}

func (c *countingStore) add(ctx context.Context, kind string) {
	op := chat.Operation(ctx)
	if op == "" {
		op = "other"
	}
	c.mu.Lock()
	c.counts[kind+" "+op]++
	c.mu.Unlock()
}

func (c *countingStore) Update(ctx context.Context, fn func(chat.Tx) error) error {
	if chat.LazyCommit(ctx) {
		c.add(ctx, "lazy update")
		return c.Store.Update(ctx, fn)
	}
	c.add(ctx, "update")
	return c.Store.Update(ctx, fn)
}

func (c *countingStore) View(ctx context.Context, fn func(chat.Tx) error) error {
	c.add(ctx, "view")
	return c.Store.View(ctx, fn)
}

func (c *countingStore) WatchOutbox(ctx context.Context) (<-chan struct{}, error) {
	return c.Store.(chat.OutboxWatcher).WatchOutbox(ctx)
}

func (c *countingStore) WatchEvents(ctx context.Context) (<-chan struct{}, error) {
	return c.Store.(chat.EventWatcher).WatchEvents(ctx)
}

func (c *countingStore) WatchDeliveries(ctx context.Context) (<-chan struct{}, error) {
	return c.Store.(chat.DeliveryWatcher).WatchDeliveries(ctx)
}

// snapshot returns a copy of the counts.
func (c *countingStore) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// diff returns b - a, without the zero entries.
func diff(a, b map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range b {
		if d := v - a[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// TestCreatesWithoutWebhookCauseNoClaim runs what a server runs (the
// dispatcher and the stream hub woken by the store's commit signals, polls
// an hour apart so that only commits can wake anything) and counts
// the store transactions of message creation. With no webhook registered
// the creates cause no claim transaction: a commit that brought no
// delivery wakes nothing. The marker at the end (a webhook, then one
// message it receives) makes sure the dispatcher had handled every signal
// of the creates before the count is taken: exactly one claim, the
// marker's. The counts per create, with and without a webhook, are logged.
func TestCreatesWithoutWebhookCauseNoClaim(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			cs := &countingStore{Store: b.open(t), counts: map[string]int{}}
			var recorded atomic.Int64
			start(t, cs, testConfig(func(c *Config) {
				c.PollInterval = time.Hour
				c.OnRecorded = func(string) { recorded.Add(1) }
			}))
			// No OnCommit: the store signals commits (as in the example
			// server, which sets it only for a store that cannot).
			svc, err := chat.New(ctx, cs, chat.Config{})
			require.NoError(t, err)
			hub := stream.New(svc, stream.Config{PollInterval: time.Hour})
			require.NoError(t, hub.Start(ctx))
			t.Cleanup(func() { _ = hub.Stop(context.Background()) })
			admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
			require.NoError(t, err)
			_, err = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
			require.NoError(t, err)
			require.Eventually(t, func() bool { return cs.snapshot()["lazy update "+OpClaim] >= 1 }, patience, time.Millisecond,
				"the dispatcher's first claim, at start")
			post := func(text string) {
				t.Helper()
				_, err := svc.CreateMessage(ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData(text)})
				require.NoError(t, err)
			}
			const n = 20

			before := cs.snapshot()
			for range n {
				post("no webhook")
			}
			rc := newReceiver(t, "k", nil)
			createHook(t, cs, rc.URL, "k")
			marker := cs.snapshot()
			post("marker")
			require.Eventually(t, func() bool { return recorded.Load() >= 1 }, patience, time.Millisecond)
			after := cs.snapshot()
			require.Equal(t, 1, after["lazy update "+OpClaim]-before["lazy update "+OpClaim],
				"claims: one for the marker's delivery, none for %d creates without a webhook", n)
			t.Logf("%s: transactions of %d creates without a webhook: %v", b.name, n, diff(before, marker))

			withHook := cs.snapshot()
			for range n {
				post("with a webhook")
			}
			require.Eventually(t, func() bool { return recorded.Load() >= n+1 }, patience, time.Millisecond)
			d := diff(withHook, cs.snapshot())
			t.Logf("%s: transactions of %d creates with one webhook: %v", b.name, n, d)
			// Claims and finishes are done again when lost: their commits
			// need not wait for the disk; nothing else is lazy.
			for k := range d {
				lazyOp := k == "lazy update "+OpClaim || k == "lazy update "+OpFinish
				require.Equal(t, lazyOp, strings.HasPrefix(k, "lazy "), k)
			}
			require.Positive(t, d["lazy update "+OpFinish], "finishes")
		})
	}
}
