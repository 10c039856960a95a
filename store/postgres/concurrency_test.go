package postgres_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
)

// TestConcurrentMigrations opens the same new schema from 4 goroutines at
// once: the advisory lock lets one of them migrate while the others wait,
// and all of them succeed.
func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	dsn := testDSN(t)
	ctx := ctxT(t)
	stores := make([]*postgres.Store, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stores[i], errs[i] = postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxOpenConns: 2})
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "Open #%d", i)
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	var n, latest int
	require.NoError(t, admin(t).QueryRow("SELECT count(*), max(version) FROM "+pq.QuoteIdentifier(schema)+".chat_migrations").Scan(&n, &latest))
	require.Equal(t, postgres.LatestVersion(), n, "each migration recorded once")
	require.Equal(t, postgres.LatestVersion(), latest)
	// Every store works.
	for i, s := range stores {
		require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
			return tx.CreateChannel(ctx, channel(fmt.Sprintf("c%d", i), at(0)))
		}))
	}
	// Migrating again is a no-op.
	require.NoError(t, postgres.Migrate(ctx, stores[0].DB(), schema))
}

// Environment of the child processes of TestMultiProcessSegments.
const (
	envChild   = "CHAT_TEST_POSTGRES_CHILD"
	envSchema  = "CHAT_TEST_POSTGRES_CHILD_SCHEMA"
	envPerG    = "CHAT_TEST_POSTGRES_CHILD_PER_GOROUTINE"
	childProcs = 2
	childGs    = 8
	perG       = 250
)

// TestMultiProcessSegments re-executes the test binary as 2 child
// processes; each runs 8 goroutines that create messages in one channel of
// one schema (NextSegment and CreateMessage in one Update). The segments
// must come out unique and gapless, 1..N, with messageCount = N = rows.
func TestMultiProcessSegments(t *testing.T) {
	if os.Getenv(envChild) == "1" {
		runSegmentChild(t)
		return
	}
	t.Parallel()
	schema := newSchema(t)
	s := openStore(t, schema)
	ctx := ctxT(t)
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { return tx.CreateChannel(ctx, channel("busy", at(0))) }))

	per := perG
	if testing.Short() {
		per = 25
	}
	var wg sync.WaitGroup
	outs := make([][]byte, childProcs)
	errs := make([]error, childProcs)
	for p := 0; p < childProcs; p++ {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMultiProcessSegments$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), envChild+"=1", envSchema+"="+schema, envPerG+"="+strconv.Itoa(per),
			"CHAT_TEST_POSTGRES_CHILD_ID="+strconv.Itoa(p))
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[p], errs[p] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for p := range errs {
		require.NoError(t, errs[p], "child %d:\n%s", p, outs[p])
		require.Contains(t, string(outs[p]), "child done", "child %d did not run its work:\n%s", p, outs[p])
	}

	want := int64(childProcs * childGs * per)
	var rows, distinct, minSeg, maxSeg int64
	require.NoError(t, admin(t).QueryRow(`SELECT count(*), count(DISTINCT channel_segment), min(channel_segment), max(channel_segment)
		FROM `+pq.QuoteIdentifier(schema)+`.messages WHERE channel_id = 'busy'`).Scan(&rows, &distinct, &minSeg, &maxSeg))
	require.Equal(t, want, rows, "row count")
	require.Equal(t, want, distinct, "segments are unique")
	require.Equal(t, int64(1), minSeg, "segments start at 1")
	require.Equal(t, want, maxSeg, "segments are gapless")
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		c, err := tx.GetChannel(ctx, "busy")
		require.NoError(t, err)
		require.Equal(t, want, c.MessageCount, "messageCount")
		return nil
	}))
}

func runSegmentChild(t *testing.T) {
	schema := os.Getenv(envSchema)
	per, _ := strconv.Atoi(os.Getenv(envPerG))
	id := os.Getenv("CHAT_TEST_POSTGRES_CHILD_ID")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, testDSN(t), &postgres.Options{Schema: schema, MaxOpenConns: childGs})
	require.NoError(t, err)
	defer s.Close()
	var wg sync.WaitGroup
	errs := make(chan error, childGs)
	for g := 0; g < childGs; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				err := s.Update(ctx, func(tx chat.Tx) error {
					m := message(fmt.Sprintf("p%s-g%d-%d", id, g, i), "busy", "u", 0)
					if g%2 == 0 {
						// The one-statement path the Service takes.
						if _, ok := tx.(chat.MessageAppender); !ok {
							return fmt.Errorf("the Postgres Tx is no chat.MessageAppender")
						}
						_, err := chat.AppendMessage(ctx, tx, m, time.Now())
						return err
					}
					c, err := tx.NextSegment(ctx, "busy", time.Now())
					if err != nil {
						return err
					}
					m.ChannelSegment = c.MessageCount
					return tx.CreateMessage(ctx, m)
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Log("child done")
}

// TestConcurrentClaims runs two Store instances (as two processes would)
// with 4 claimers each against one outbox: no delivery is handed out twice
// while its lease lasts, and every delivery is claimed.
func TestConcurrentClaims(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a := openStore(t, schema)
	b := openStore(t, schema)
	ctx := ctxT(t)
	const n = 300
	var ds []*chat.Delivery
	for i := 0; i < n; i++ {
		ds = append(ds, delivery(fmt.Sprintf("d%03d", i), "w", at(int64(i%7))))
	}
	require.NoError(t, a.Update(ctx, func(tx chat.Tx) error { return tx.EnqueueDeliveries(ctx, ds) }))

	var (
		mu    sync.Mutex
		owner = map[string]string{}
		dups  []string
		wg    sync.WaitGroup
	)
	now := at(1000).Time
	for _, s := range []*postgres.Store{a, b} {
		for g := 0; g < 4; g++ {
			wg.Add(1)
			name := fmt.Sprintf("%s-%d", s.Schema()[:4], g)
			if s == b {
				name = "b" + name
			}
			go func() {
				defer wg.Done()
				for {
					var got []*chat.Delivery
					err := s.Update(ctx, func(tx chat.Tx) error {
						var err error
						got, err = tx.ClaimDeliveries(ctx, name, now, time.Hour, 7, chat.DeliveryQuota{})
						return err
					})
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, d := range got {
						if prev, ok := owner[d.RequestID]; ok {
							dups = append(dups, d.RequestID+" by "+prev+" and "+name)
						}
						owner[d.RequestID] = name
						if d.LeaseOwner != name {
							dups = append(dups, d.RequestID+" returned with owner "+d.LeaseOwner)
						}
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	require.Empty(t, dups)
	require.Len(t, owner, n)
	// After the leases expire the deliveries can be claimed again.
	require.NoError(t, b.Update(ctx, func(tx chat.Tx) error {
		got, err := tx.ClaimDeliveries(ctx, "late", now.Add(2*time.Hour), time.Minute, 0, chat.DeliveryQuota{})
		require.Len(t, got, n)
		return err
	}))
}
