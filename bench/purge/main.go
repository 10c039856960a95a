// Command purge measures a purge of one user's messages
// (Service.PurgeUserMessages) on SQLite or Postgres: the time of each
// batch transaction, the longest time a purge transaction held the
// store's write side (on SQLite, the database's one write lock), and how
// long an unrelated message creation waits while the purge runs, beside
// the same creations measured without a purge in the same run (the
// ceiling). With -compare it also times the single-transaction path that
// a global ban with deleteMessages takes, on the same number of messages.
//
//	go run ./bench/purge                                   # SQLite in a temporary directory
//	go run ./bench/purge -store 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//	go run ./bench/purge -messages 100000 -batch 500 -compare
//
// The Postgres store is opened in a fresh schema, dropped at the end.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/store/sqlite"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "purge:", err)
		os.Exit(1)
	}
}

// purgeKey marks the context of the purge, so the timing store tells its
// transactions from the concurrent creations'.
type purgeKey struct{}

// timedStore records how long each Update of the purge ran, from the
// moment its function started (the write side is held from then) to the
// moment Update returned (committed).
type timedStore struct {
	chat.Store
	mu    sync.Mutex
	holds []time.Duration
}

func (s *timedStore) Update(ctx context.Context, fn func(tx chat.Tx) error) error {
	if ctx.Value(purgeKey{}) == nil {
		return s.Store.Update(ctx, fn)
	}
	var start time.Time
	err := s.Store.Update(ctx, func(tx chat.Tx) error {
		if start.IsZero() {
			start = time.Now()
		}
		return fn(tx)
	})
	if !start.IsZero() {
		s.mu.Lock()
		s.holds = append(s.holds, time.Since(start))
		s.mu.Unlock()
	}
	return err
}

type options struct {
	store    string
	messages int
	channels int
	batch    int
	compare  bool
}

func run() error {
	var o options
	flag.StringVar(&o.store, "store", "sqlite", "sqlite (a temporary file) or a postgres:// URL")
	flag.IntVar(&o.messages, "messages", 100_000, "messages of the purged user")
	flag.IntVar(&o.channels, "channels", 10, "channels they are spread over")
	flag.IntVar(&o.batch, "batch", chat.DefaultPurgeBatch, "messages per purge transaction (Config.PurgeBatch)")
	flag.BoolVar(&o.compare, "compare", false, "also time the single-transaction delete of a global ban with deleteMessages")
	flag.Parse()
	ctx := context.Background()
	st, cleanup, err := open(ctx, o.store)
	if err != nil {
		return err
	}
	defer cleanup()
	ts := &timedStore{Store: st}
	svc, err := chat.New(ctx, ts, chat.Config{PurgeBatch: o.batch, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	if _, _, err := svc.CreateAdmin(ctx, "", "bench", "bench"); err != nil {
		return err
	}
	if err := seed(ctx, svc, ts, "spammer", "s", o); err != nil {
		return err
	}
	if _, err := svc.CreateChannel(ctx, "bench", chat.CreateChannelInput{ChannelID: "quiet", Type: chat.ChannelTypeStandard, UserIDs: []string{"bystander"}}); err != nil {
		return err
	}
	fmt.Printf("store %s, %d messages of one user in %d channels, batch %d\n", kind(o.store), o.messages, o.channels, o.batch)

	// The ceiling: creations with nothing else running, as many as the
	// purge will see.
	base, err := creations(ctx, svc, func(stop <-chan struct{}) { timer(stop, 3*time.Second) })
	if err != nil {
		return err
	}
	// The purge, with the same creations beside it.
	var res *chat.PurgeResult
	var elapsed time.Duration
	var perr error
	during, err := creations(ctx, svc, func(<-chan struct{}) {
		t0 := time.Now()
		res, perr = svc.PurgeUserMessages(context.WithValue(ctx, purgeKey{}, true), "bench", chat.PurgeUserMessagesInput{UserID: "spammer"})
		elapsed = time.Since(t0)
	})
	if err != nil {
		return err
	}
	if perr != nil {
		return perr
	}
	if res.Deleted != o.messages {
		return fmt.Errorf("purge deleted %d messages, want %d", res.Deleted, o.messages)
	}
	holds := slices.Clone(ts.holds)
	slices.Sort(holds)
	fmt.Printf("purge: %d messages in %d transactions, %s (%.0f messages/s)\n", res.Deleted, len(holds), round(elapsed), float64(res.Deleted)/elapsed.Seconds())
	fmt.Printf("purge transaction (write side held): p50 %s, p99 %s, max %s\n", round(pct(holds, 50)), round(pct(holds, 99)), round(pct(holds, 100)))
	fmt.Printf("concurrent create, no purge (ceiling): %s\n", summary(base))
	fmt.Printf("concurrent create, during the purge:   %s\n", summary(during))

	if o.compare {
		if err := seed(ctx, svc, ts, "spammer2", "t", o); err != nil {
			return err
		}
		ts.mu.Lock()
		ts.holds = nil
		ts.mu.Unlock()
		var gerr error
		one, err := creations(ctx, svc, func(<-chan struct{}) {
			gerr = svc.GlobalBan(context.WithValue(ctx, purgeKey{}, true), "bench", "spammer2", true)
		})
		if err != nil {
			return err
		}
		if gerr != nil {
			return gerr
		}
		fmt.Printf("one transaction (global ban, deleteMessages): write side held %s\n", round(slices.Max(ts.holds)))
		fmt.Printf("concurrent create, during it:          %s\n", summary(one))
	}
	return nil
}

// seed stores o.messages messages of userID spread over o.channels new
// channels (ids prefixed with prefix), 2,000 per transaction.
func seed(ctx context.Context, svc *chat.Service, st chat.Store, userID, prefix string, o options) error {
	var ids []string
	for i := range o.channels {
		id := fmt.Sprintf("%s%03d", prefix, i)
		ids = append(ids, id)
		if _, err := svc.CreateChannel(ctx, "bench", chat.CreateChannelInput{ChannelID: id, Type: chat.ChannelTypeStandard, UserIDs: []string{userID}}); err != nil {
			return err
		}
	}
	const per = 2000
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for done := 0; done < o.messages; done += per {
		n := min(per, o.messages-done)
		err := st.Update(ctx, func(tx chat.Tx) error {
			for i := range n {
				k := done + i
				at := chat.NewTime(t0.Add(time.Duration(k) * time.Millisecond))
				m := &chat.Message{MessageID: chat.NewID(), ChannelID: ids[k%len(ids)], UserID: userID, Type: chat.MessageTypeText,
					Data: map[string]any{"text": fmt.Sprintf("spam %d", k)}, CreatedAt: at, UpdatedAt: at}
				if _, err := chat.AppendMessage(ctx, tx, m, at.Time); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// creations posts to channel "quiet" as "bystander", one message after
// another, while work runs, and returns each post's latency.
func creations(ctx context.Context, svc *chat.Service, work func(stop <-chan struct{})) ([]time.Duration, error) {
	stop := make(chan struct{})
	var lat []time.Duration
	var ferr atomic.Value
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		in := chat.CreateMessageInput{ChannelID: "quiet", Type: chat.MessageTypeText, Data: map[string]any{"text": "hello"}}
		for {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			if _, err := svc.CreateMessage(ctx, "bystander", in); err != nil {
				ferr.Store(err)
				return
			}
			lat = append(lat, time.Since(t0))
			time.Sleep(2 * time.Millisecond) // a steady trickle, not a flood
		}
	}()
	work(stop)
	close(stop)
	wg.Wait()
	if err, ok := ferr.Load().(error); ok {
		return nil, err
	}
	slices.Sort(lat)
	return lat, nil
}

func timer(_ <-chan struct{}, d time.Duration) { time.Sleep(d) }

func pct(v []time.Duration, p int) time.Duration {
	if len(v) == 0 {
		return 0
	}
	i := (len(v)*p + 99) / 100
	return v[max(min(i, len(v))-1, 0)]
}

func summary(v []time.Duration) string {
	return fmt.Sprintf("%d posts, p50 %s, p99 %s, max %s", len(v), round(pct(v, 50)), round(pct(v, 99)), round(pct(v, 100)))
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

func kind(s string) string {
	if strings.HasPrefix(s, "postgres") {
		return "postgres"
	}
	return "sqlite"
}

// open opens the store: SQLite in a temporary directory, or Postgres in a
// fresh schema of the given database.
func open(ctx context.Context, s string) (chat.Store, func(), error) {
	if s == "sqlite" {
		dir, err := os.MkdirTemp("", "purge-bench-")
		if err != nil {
			return nil, nil, err
		}
		st, err := sqlite.Open(ctx, filepath.Join(dir, "bench.db"), nil)
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		return st, func() { st.Close(); os.RemoveAll(dir) }, nil
	}
	if !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
		return nil, nil, errors.New("-store must be sqlite or a postgres:// URL")
	}
	schema := fmt.Sprintf("purge_bench_%d", time.Now().UnixNano())
	st, err := postgres.Open(ctx, s, &postgres.Options{Schema: schema})
	if err != nil {
		return nil, nil, err
	}
	return st, func() {
		st.Close()
		if db, err := sql.Open("postgres", s); err == nil {
			_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
			db.Close()
		}
	}, nil
}
