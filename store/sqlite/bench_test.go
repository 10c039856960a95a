package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
)

// The benchmarks compare the store with the raw driver ceiling measured in
// the same run:
//
//	go test -bench . -benchtime 3s -run '^$' ./store/sqlite/
//
// CreateMessage/writers=N is one Update with NextSegment + CreateMessage
// (the Service's message post) from N concurrent goroutines; RawInsert is a
// plain INSERT of a similar row into the same schema, one autocommit
// transaction per insert, with the same journal (WAL) and synchronous=FULL
// settings, from one goroutine. MessagePage reads a page of 50 messages
// from a channel of 1,000,000.

var benchText = "the quick brown fox jumps over the lazy dog, twice over, to make a realistic chat line"

func BenchmarkCreateMessage(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := newStore(b, nil)
			ctx := context.Background()
			const channels = 8
			must(b, s.Update(ctx, func(tx chat.Tx) error {
				for i := 0; i < channels; i++ {
					if err := tx.CreateChannel(ctx, testChannel(fmt.Sprintf("c%d", i))); err != nil {
						return err
					}
				}
				return nil
			}))
			var seq, gid atomic.Int64
			post := func(ch string) {
				id := fmt.Sprintf("m%d", seq.Add(1))
				if err := s.Update(ctx, func(tx chat.Tx) error {
					_, err := postMessage(ctx, tx, ch, id, benchText)
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			if writers == 1 {
				for i := 0; i < b.N; i++ {
					post("c0")
				}
			} else {
				b.SetParallelism(max(1, writers/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					ch := fmt.Sprintf("c%d", gid.Add(1)%channels)
					for pb.Next() {
						post(ch)
					}
				})
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			st := s.Stats()
			b.ReportMetric(float64(st.Updates)/float64(st.Commits), "updates/commit")
		})
	}
}

// BenchmarkRawInsert is the raw driver ceiling: one INSERT per autocommit
// transaction through database/sql and go-sqlite3, synchronous=FULL, WAL.
func BenchmarkRawInsert(b *testing.B) {
	b.Run("writers=1", func(b *testing.B) {
		db := openRaw(b, filepath.Join(b.TempDir(), "raw.db"))
		ctx := context.Background()
		now := time.Now().UnixMilli()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := db.ExecContext(ctx, `INSERT INTO messages (message_id, channel_id, channel_segment,
			user_id, type, data, tags, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)`,
				fmt.Sprintf("m%d", i), "c0", i+1, "u1", "text", `{"text":"`+benchText+`"}`, "null", now, now); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
}

// BenchmarkCreateService is what the example server's store does for
// POST /message at 16 connections, without HTTP: 16 goroutines calling
// Service.CreateMessage, all to one channel, without a webhook and with
// one registered (each create then also enqueues its delivery; no
// dispatcher runs, so they stay pending). -benchtime sets the count of
// creates (e.g. 20000x). It reports creates per second, Update calls per
// commit, and, from /proc/self/io where there is one, the bytes and the
// write system calls per create of the whole process (the write-ahead
// log's frames, each a header and a page, and the checkpoints' copies
// into the database file).
//
//	go test -run '^$' -bench CreateService -benchtime 20000x ./store/sqlite/
func BenchmarkCreateService(b *testing.B) {
	for _, hooks := range []int{0, 1} {
		b.Run(fmt.Sprintf("webhooks=%d", hooks), func(b *testing.B) { benchCreateService(b, hooks) })
	}
}

func benchCreateService(b *testing.B, hooks int) {
	const writers = 16
	ctx := context.Background()
	s := newStore(b, nil)
	svc, err := chat.New(ctx, s, chat.Config{})
	must(b, err)
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	must(b, err)
	_, err = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "bench",
		Type: chat.ChannelTypeStandard, UserIDs: []string{admin.UserID}})
	must(b, err)
	for i := 0; i < hooks; i++ {
		_, err = svc.CreateWebhook(ctx, admin.UserID, fmt.Sprintf("https://hooks.example.com/chat/%d", i), nil)
		must(b, err)
	}
	io0, haveIO := procIO()
	st0 := s.Stats()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := svc.CreateMessage(ctx, admin.UserID, chat.CreateMessageInput{ChannelID: "bench",
					Type: chat.MessageTypeText, Data: chat.TextData(benchText)}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "creates/s")
	st := s.Stats()
	b.ReportMetric(float64(st.Updates-st0.Updates)/float64(st.Commits-st0.Commits), "updates/commit")
	if io1, ok := procIO(); ok && haveIO {
		b.ReportMetric(float64(io1[0]-io0[0])/n, "bytes-written/create")
		b.ReportMetric(float64(io1[1]-io0[1])/n, "write-calls/create")
	}
}

// procIO returns the bytes this process passed to write system calls and
// the count of those calls (wchar and syscw of /proc/self/io); ok is false
// where there is no such file.
func procIO() (v [2]int64, ok bool) {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return v, false
	}
	found := 0
	for _, l := range strings.Split(string(raw), "\n") {
		k, val, _ := strings.Cut(l, ": ")
		i := slices.Index([]string{"wchar", "syscw"}, k)
		if i < 0 {
			continue
		}
		if v[i], err = strconv.ParseInt(val, 10, 64); err != nil {
			return v, false
		}
		found++
	}
	return v, found == 2
}

// BenchmarkVsRaw measures the store and the raw ceiling in alternating
// rounds of 64 messages within one benchmark, so that both see the same
// machine and disk conditions (other processes' load, fsync latency), and
// reports their ratio: store-msgs/s / raw-msgs/s. The store side posts with
// the given number of concurrent writers; the raw side is always one
// writer, one INSERT per transaction.
func BenchmarkVsRaw(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			ctx := context.Background()
			s := newStore(b, nil)
			must(b, s.Update(ctx, func(tx chat.Tx) error {
				for i := 0; i < writers; i++ {
					if err := tx.CreateChannel(ctx, testChannel(fmt.Sprintf("c%d", i))); err != nil {
						return err
					}
				}
				return nil
			}))
			db := openRaw(b, filepath.Join(b.TempDir(), "raw.db"))
			now := time.Now().UnixMilli()
			const round = 64
			var storeT, rawT time.Duration
			var seq, rawSeq atomic.Int64
			b.ResetTimer()
			for done := 0; done < b.N; done += round {
				start := time.Now()
				var wg sync.WaitGroup
				for w := 0; w < writers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < round/writers; i++ {
							id := fmt.Sprintf("m%d", seq.Add(1))
							if err := s.Update(ctx, func(tx chat.Tx) error {
								_, err := postMessage(ctx, tx, fmt.Sprintf("c%d", w), id, benchText)
								return err
							}); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				storeT += time.Since(start)
				start = time.Now()
				for i := 0; i < round; i++ {
					n := rawSeq.Add(1)
					if _, err := db.ExecContext(ctx, `INSERT INTO messages (message_id, channel_id, channel_segment,
					user_id, type, data, tags, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)`,
						fmt.Sprintf("m%d", n), "c0", n, "u1", "text", `{"text":"`+benchText+`"}`, "null", now, now); err != nil {
						b.Fatal(err)
					}
				}
				rawT += time.Since(start)
			}
			b.StopTimer()
			ops := float64(seq.Load())
			storeRate, rawRate := ops/storeT.Seconds(), float64(rawSeq.Load())/rawT.Seconds()
			b.ReportMetric(storeRate, "store-msgs/s")
			b.ReportMetric(rawRate, "raw-msgs/s")
			b.ReportMetric(storeRate/rawRate, "store/raw")
			st := s.Stats()
			b.ReportMetric(float64(st.Updates)/float64(st.Commits), "updates/commit")
		})
	}
}

// openRaw opens a database with the store's schema and the store's write
// settings, for raw driver measurements.
func openRaw(tb testing.TB, path string) *sql.DB {
	requireCgo(tb)
	p := url.Values{}
	p.Set("_journal_mode", "WAL")
	p.Set("_synchronous", "FULL")
	p.Set("_busy_timeout", "5000")
	p.Set("_foreign_keys", "1")
	p.Set("_stmt_cache_size", "128")
	db, err := sql.Open("sqlite3", dsn(path, p))
	must(tb, err)
	db.SetMaxOpenConns(1)
	tb.Cleanup(func() { db.Close() })
	must(tb, Migrate(context.Background(), db))
	return db
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// The 1M-message fixture is built once per test binary run.
const fixtureMessages = 1_000_000

var (
	fixtureOnce sync.Once
	fixtureDir  string
	fixturePath string
	fixtureErr  error
	fixtureTook time.Duration
)

// bigChannel returns the path of a database with channel "big" holding
// fixtureMessages messages, built with one bulk transaction.
func bigChannel(tb testing.TB) string {
	requireCgo(tb)
	fixtureOnce.Do(func() {
		fixtureDir, fixtureErr = os.MkdirTemp("", "chat-sqlite-bench-")
		if fixtureErr != nil {
			return
		}
		fixturePath = filepath.Join(fixtureDir, "big.db")
		start := time.Now()
		fixtureErr = buildFixture(fixturePath)
		fixtureTook = time.Since(start)
	})
	must(tb, fixtureErr)
	return fixturePath
}

func buildFixture(path string) error {
	ctx := context.Background()
	p := url.Values{}
	p.Set("_journal_mode", "WAL")
	p.Set("_synchronous", "OFF")
	p.Set("_stmt_cache_size", "16")
	db, err := sql.Open("sqlite3", dsn(path, p))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := Migrate(ctx, db); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	base := t0.UnixMilli()
	if _, err := tx.ExecContext(ctx, `INSERT INTO channels (channel_id, type, display_name, last_activity,
	created_at, updated_at, message_count) VALUES ('big', 'standard', 'big', ?, ?, ?, ?)`,
		base, base, base, fixtureMessages); err != nil {
		return err
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO messages (message_id, channel_id, channel_segment, user_id,
	type, data, tags, created_at, updated_at) VALUES (?, 'big', ?, ?, 'text', ?, 'null', ?, ?)`)
	if err != nil {
		return err
	}
	for i := 1; i <= fixtureMessages; i++ {
		at := base + int64(i)
		if _, err := st.ExecContext(ctx, fmt.Sprintf("m%07d", i), i, fmt.Sprintf("u%d", i%100),
			`{"text":"`+benchText+`"}`, at, at); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}

// BenchmarkMessagePage reads pages of 50 messages from a channel of
// 1,000,000: the newest page, and pages before a random segment (a
// scrolled-back reader). It reports the median latency as p50-ns.
func BenchmarkMessagePage(b *testing.B) {
	path := bigChannel(b)
	if fi, err := os.Stat(path); err == nil {
		b.Logf("fixture: %d messages, %d MB, built in %v", fixtureMessages, fi.Size()>>20, fixtureTook.Round(time.Millisecond))
	}
	s, err := Open(context.Background(), path, nil)
	must(b, err)
	defer s.Close()
	ctx := context.Background()
	for _, mode := range []string{"newest", "random"} {
		b.Run(mode, func(b *testing.B) {
			durs := make([]time.Duration, 0, b.N)
			rng := rand.New(rand.NewPCG(1, 2))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f := chat.MessageFilter{ChannelID: "big", Descending: true, Limit: 50}
				if mode == "random" {
					f.BeforeSegment = 51 + rng.Int64N(fixtureMessages-50)
				}
				start := time.Now()
				var n int
				if err := s.View(ctx, func(tx chat.Tx) error {
					ms, err := tx.QueryMessages(ctx, f)
					n = len(ms)
					return err
				}); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(start))
				if n != 50 {
					b.Fatalf("page has %d messages", n)
				}
			}
			b.StopTimer()
			slices.Sort(durs)
			b.ReportMetric(float64(durs[len(durs)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(durs[len(durs)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
