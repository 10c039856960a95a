package postgres_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
)

// Run with:
//
//	CHAT_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//		go test -run '^$' -bench . -benchtime 3s ./store/postgres/

// parallel splits b.N operations over workers goroutines and reports the
// throughput in msgs/s.
func parallel(b *testing.B, workers int, op func(worker, i int) error) {
	b.Helper()
	parallelUnit(b, workers, "msgs/s", op)
}

// parallelUnit is parallel with the throughput reported in unit.
func parallelUnit(b *testing.B, workers int, unit string, op func(worker, i int) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if err := op(w, int(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), unit)
}

// post creates a message in channelID as the Service does: AppendMessage
// in one Update. Message ids come from seq.
func post(ctx context.Context, s *postgres.Store, seq *atomic.Int64, channelID string) error {
	n := seq.Add(1)
	return s.Update(ctx, func(tx chat.Tx) error {
		now := time.Now()
		_, err := chat.AppendMessage(ctx, tx, &chat.Message{
			MessageID: "m" + strconv.FormatInt(n, 10), ChannelID: channelID, UserID: "u", Type: chat.MessageTypeText,
			Data: map[string]any{"text": "hello, this is a benchmark message of a typical length"},
			Tags: []string{}, CreatedAt: chat.NewTime(now), UpdatedAt: chat.NewTime(now),
		}, now)
		return err
	})
}

// BenchmarkCreateMessage measures creating a message as the Service does
// (chat.AppendMessage in one Update: the channel increment and the message
// row in one statement; READ COMMITTED, synchronous_commit on)
// beside the raw driver ceiling measured in the same run: a plain INSERT of
// a similar row into a table with the same indexes, one transaction per
// insert, through a prepared statement of database/sql with lib/pq.
func BenchmarkCreateMessage(b *testing.B) {
	dsn := testDSN(b)
	schema := newSchema(b)
	ctx := context.Background()
	s, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxOpenConns: 16})
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	q := pq.QuoteIdentifier(schema)

	var sc string
	require.NoError(b, s.DB().QueryRow("SHOW synchronous_commit").Scan(&sc))
	b.Logf("synchronous_commit=%s", sc)

	// The raw table: the message columns and the indexes a message row
	// maintains (primary key, unique segment, author), but no channel row.
	_, err = s.DB().Exec(`CREATE TABLE ` + q + `.raw_messages (LIKE ` + q + `.messages INCLUDING DEFAULTS INCLUDING INDEXES)`)
	require.NoError(b, err)
	raw, err := s.DB().Prepare(`INSERT INTO ` + q + `.raw_messages
		(message_id, channel_id, user_id, type, data, tags, created_at, updated_at, channel_segment)
		VALUES ($1, $2, $3, 'text', $4, '{}', $5, $5, $6)`)
	require.NoError(b, err)
	b.Cleanup(func() { raw.Close() })

	for i := 0; i < 8; i++ {
		require.NoError(b, s.Update(ctx, func(tx chat.Tx) error {
			return tx.CreateChannel(ctx, channel("c"+strconv.Itoa(i), at(0)))
		}))
	}
	var seq, rawSeq atomic.Int64
	dataJSON := `{"text":"hello, this is a benchmark message of a typical length"}`
	create := func(channelID string) error { return post(ctx, s, &seq, channelID) }
	rawAutocommit := func(w int) error {
		n := rawSeq.Add(1)
		_, err := raw.ExecContext(ctx, "r"+strconv.FormatInt(n, 10), "raw"+strconv.Itoa(w), "u", dataJSON, time.Now(), n)
		return err
	}
	rawTx := func(w int) error {
		n := rawSeq.Add(1)
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.StmtContext(ctx, raw).ExecContext(ctx, "r"+strconv.FormatInt(n, 10), "raw"+strconv.Itoa(w), "u", dataJSON, time.Now(), n); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}

	// The machine may be shared and its load may drift during a run, so
	// the comparison that matters is measured interleaved: each iteration
	// does one of each, back to back, and the time of each kind is summed
	// separately.
	b.Run("interleaved/1writer", func(b *testing.B) {
		var tAuto, tTx, tStore time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			if err := rawAutocommit(0); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := rawTx(0); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			if err := create("c0"); err != nil {
				b.Fatal(err)
			}
			t3 := time.Now()
			tAuto += t1.Sub(t0)
			tTx += t2.Sub(t1)
			tStore += t3.Sub(t2)
		}
		n := float64(b.N)
		b.ReportMetric(float64(tAuto.Microseconds())/n, "raw-autocommit-µs/op")
		b.ReportMetric(float64(tTx.Microseconds())/n, "raw-tx-µs/op")
		b.ReportMetric(float64(tStore.Microseconds())/n, "store-µs/op")
		b.ReportMetric(100*float64(tAuto)/float64(tStore), "store-%-of-autocommit")
		b.ReportMetric(100*float64(tTx)/float64(tStore), "store-%-of-tx")
	})
	b.Run("interleaved/8writers", func(b *testing.B) {
		var tAuto, tStore, nAuto, nStore atomic.Int64
		parallel(b, 8, func(w, i int) error {
			start := time.Now()
			if i%2 == 0 {
				err := rawAutocommit(w)
				tAuto.Add(int64(time.Since(start)))
				nAuto.Add(1)
				return err
			}
			err := create("c" + strconv.Itoa(w))
			tStore.Add(int64(time.Since(start)))
			nStore.Add(1)
			return err
		})
		if nAuto.Load() > 0 && nStore.Load() > 0 {
			auto := float64(tAuto.Load()) / float64(nAuto.Load())
			store := float64(tStore.Load()) / float64(nStore.Load())
			b.ReportMetric(auto/1e3, "raw-autocommit-µs/op")
			b.ReportMetric(store/1e3, "store-µs/op")
		}
	})
	b.Run("raw-insert-autocommit/1writer", func(b *testing.B) {
		parallel(b, 1, func(w, _ int) error { return rawAutocommit(w) })
	})
	b.Run("raw-insert-tx/1writer", func(b *testing.B) {
		parallel(b, 1, func(w, _ int) error { return rawTx(w) })
	})
	b.Run("store/1writer", func(b *testing.B) {
		parallel(b, 1, func(_, _ int) error { return create("c0") })
	})
	b.Run("raw-insert-autocommit/8writers", func(b *testing.B) {
		parallel(b, 8, func(w, _ int) error { return rawAutocommit(w) })
	})
	b.Run("store/8writers-8channels", func(b *testing.B) {
		parallel(b, 8, func(w, _ int) error { return create("c" + strconv.Itoa(w)) })
	})
	b.Run("store/8writers-1channel", func(b *testing.B) {
		parallel(b, 8, func(_, _ int) error { return create("c0") })
	})
}

// BenchmarkMessagePage reads pages of 50 messages, newest first from a
// random position, of a channel holding 1,000,000 messages (built with one
// INSERT ... SELECT generate_series and ANALYZE'd), each page in its own
// View.
func BenchmarkMessagePage(b *testing.B) {
	dsn := testDSN(b)
	schema := newSchema(b)
	ctx := context.Background()
	s, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxOpenConns: 16})
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	q := pq.QuoteIdentifier(schema)
	const total = 1_000_000
	start := time.Now()
	require.NoError(b, s.Update(ctx, func(tx chat.Tx) error {
		c := channel("big", at(0))
		c.MessageCount = total
		return tx.CreateChannel(ctx, c)
	}))
	_, err = s.DB().Exec(`INSERT INTO ` + q + `.messages
		(message_id, channel_id, user_id, type, data, tags, created_at, updated_at, channel_segment)
		SELECT lpad(to_hex(g), 12, '0') || 'aaaaaaaaaaaa', 'big', 'u' || (g % 1000), 'text',
			'{"text":"hello, this is a benchmark message of a typical length"}', '{}',
			timestamptz '2024-01-01' + g * interval '1 second', timestamptz '2024-01-01' + g * interval '1 second', g
		FROM generate_series(1, ` + strconv.Itoa(total) + `) g`)
	require.NoError(b, err)
	_, err = s.DB().Exec(`ANALYZE ` + q + `.messages`)
	require.NoError(b, err)
	var size string
	require.NoError(b, s.DB().QueryRow(`SELECT pg_size_pretty(pg_total_relation_size($1))`, schema+".messages").Scan(&size))
	b.Logf("fixture: %d messages (%s with indexes) in %s", total, size, time.Since(start).Round(time.Millisecond))

	page := func(before int64) error {
		return s.View(ctx, func(tx chat.Tx) error {
			ms, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "big", BeforeSegment: before, Descending: true, Limit: 50})
			if err == nil && len(ms) != 50 {
				err = fmt.Errorf("page before %d: %d messages", before, len(ms))
			}
			return err
		})
	}
	b.Run("newest/1reader", func(b *testing.B) {
		parallelUnit(b, 1, "pages/s", func(_, _ int) error { return page(0) })
	})
	b.Run("random/1reader", func(b *testing.B) {
		parallelUnit(b, 1, "pages/s", func(_, _ int) error { return page(51 + rand.Int64N(total-51)) })
	})
	b.Run("random/8readers", func(b *testing.B) {
		parallelUnit(b, 8, "pages/s", func(_, _ int) error { return page(51 + rand.Int64N(total-51)) })
	})
}

// BenchmarkVsRaw measures the store against the raw single-INSERT ceiling
// in alternating rounds inside one benchmark, so that both see the same
// machine load: each round inserts 64 rows with the raw autocommit INSERT
// (1 writer), 64 messages through the store with 1 writer, 256 with 8
// writers on 8 channels and 256 with 8 writers on 1 channel. It reports
// each rate and its ratio to the raw rate.
//
//	go test -run '^$' -bench VsRaw -benchtime 20x ./store/postgres/
func BenchmarkVsRaw(b *testing.B) {
	dsn := testDSN(b)
	ctx := context.Background()
	s, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: newSchema(b), MaxOpenConns: 16})
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	for i := 0; i < 8; i++ {
		require.NoError(b, s.Update(ctx, func(tx chat.Tx) error {
			return tx.CreateChannel(ctx, channel("c"+strconv.Itoa(i), at(0)))
		}))
	}
	q := pq.QuoteIdentifier(s.Schema())
	_, err = s.DB().Exec(`CREATE TABLE ` + q + `.raw_messages (LIKE ` + q + `.messages INCLUDING DEFAULTS INCLUDING INDEXES)`)
	require.NoError(b, err)
	raw, err := s.DB().Prepare(`INSERT INTO ` + q + `.raw_messages
		(message_id, channel_id, user_id, type, data, tags, created_at, updated_at, channel_segment)
		VALUES ($1, 'raw', 'u', 'text', $2, '{}', $3, $3, $4)`)
	require.NoError(b, err)
	b.Cleanup(func() { raw.Close() })
	dataJSON := `{"text":"hello, this is a benchmark message of a typical length"}`
	var seq atomic.Int64
	create := func(channelID string) error { return post(ctx, s, &seq, channelID) }
	// run does count operations with workers goroutines and returns the
	// elapsed time.
	run := func(workers, count int, op func(w int) error) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Value
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(count) {
					if err := op(w); err != nil {
						failed.Store(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	names := []string{"raw", "1writer", "8writers-8channels", "8writers-1channel"}
	var d [4]time.Duration
	var n [4]int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d[0] += run(1, 64, func(int) error {
			k := seq.Add(1)
			_, err := raw.ExecContext(ctx, "r"+strconv.FormatInt(k, 10), dataJSON, time.Now(), k)
			return err
		})
		d[1] += run(1, 64, func(int) error { return create("c0") })
		d[2] += run(8, 256, func(w int) error { return create("c" + strconv.Itoa(w)) })
		d[3] += run(8, 256, func(int) error { return create("c0") })
		n[0], n[1], n[2], n[3] = n[0]+64, n[1]+64, n[2]+256, n[3]+256
	}
	b.StopTimer()
	rawRate := float64(n[0]) / d[0].Seconds()
	b.ReportMetric(rawRate, "raw-msgs/s")
	for k := 1; k < len(names); k++ {
		r := float64(n[k]) / d[k].Seconds()
		b.ReportMetric(r, names[k]+"-msgs/s")
		b.ReportMetric(r/rawRate, names[k]+"/raw")
	}
}

// BenchmarkVsRaw32 measures what a user's message creation costs when many
// writers post at once, each to its own channel: 32 goroutines calling
// Service.CreateMessage (rules, message, channel counters, event log)
// against the raw ceiling at the same concurrency, a one-row INSERT per
// transaction into a table with the messages table's indexes, in
// alternating rounds so that both see the same machine load. It reports
// both rates and their ratio, and the CPU time per message of each, in
// this process and in the server's backends, when /proc shows them.
// CHAT_BENCH_COMMIT_GROUPS sets Options.CommitGroups (-1: a transaction
// per post).
//
//	go test -run '^$' -bench VsRaw32 -benchtime 5x ./store/postgres/
func BenchmarkVsRaw32(b *testing.B) {
	const writers, perRound = 32, 1024
	ctx := context.Background()
	groups, _ := strconv.Atoi(os.Getenv("CHAT_BENCH_COMMIT_GROUPS"))
	s, svc := writersFixture(b, writers, groups)
	q := pq.QuoteIdentifier(s.Schema())
	_, err := s.DB().Exec(`CREATE TABLE ` + q + `.raw_messages (LIKE ` + q + `.messages INCLUDING DEFAULTS INCLUDING INDEXES)`)
	require.NoError(b, err)
	raw, err := s.DB().Prepare(`INSERT INTO ` + q + `.raw_messages
		(message_id, channel_id, user_id, type, data, tags, created_at, updated_at, channel_segment)
		VALUES ($1, $2, 'u', 'text', $3, '{}', $4, $4, $5)`)
	require.NoError(b, err)
	b.Cleanup(func() { raw.Close() })
	dataJSON := `{"text":"hello, this is a benchmark message of a typical length"}`
	var seq atomic.Int64
	run := func(op func(w int) error) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Value
		start := time.Now()
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= perRound {
					if err := op(w); err != nil {
						failed.Store(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var dRaw, dSvc time.Duration
	var cpuRaw, cpuSvc [2]float64 // this process, the server's backends
	measured := func(d *time.Duration, cpu *[2]float64, op func(w int) error) {
		g0, p0 := cpuSeconds(b, s.DB())
		*d += run(op)
		g1, p1 := cpuSeconds(b, s.DB())
		cpu[0] += g1 - g0
		cpu[1] += p1 - p0
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		measured(&dRaw, &cpuRaw, func(w int) error {
			k := seq.Add(1)
			_, err := raw.ExecContext(ctx, "r"+strconv.FormatInt(k, 10), "raw"+strconv.Itoa(w), dataJSON, time.Now(), k)
			return err
		})
		measured(&dSvc, &cpuSvc, func(w int) error {
			_, err := svc.CreateMessage(ctx, "u"+strconv.Itoa(w), chat.CreateMessageInput{ChannelID: "c" + strconv.Itoa(w),
				Type: chat.MessageTypeText, Data: chat.TextData("hello, this is a benchmark message of a typical length")})
			return err
		})
	}
	b.StopTimer()
	n := float64(b.N * perRound)
	rawRate := n / dRaw.Seconds()
	svcRate := n / dSvc.Seconds()
	b.ReportMetric(rawRate, "raw-msgs/s")
	b.ReportMetric(svcRate, "create-msgs/s")
	b.ReportMetric(svcRate/rawRate, "create/raw")
	// CPU per message, where /proc shows it (Linux, the server on this
	// machine): the benchmark process and the server's backends.
	if cpuSvc[0] > 0 {
		b.ReportMetric(cpuRaw[0]/n*1e6, "raw-go-µs/op")
		b.ReportMetric(cpuSvc[0]/n*1e6, "create-go-µs/op")
	}
	if cpuSvc[1] > 0 {
		b.ReportMetric(cpuRaw[1]/n*1e6, "raw-pg-µs/op")
		b.ReportMetric(cpuSvc[1]/n*1e6, "create-pg-µs/op")
	}
}

// writersFixture opens a store on a new schema with the given commit
// group queues (Options.CommitGroups) and a Service on it, with an admin
// and, for each of n writers, a channel "c<i>" whose member is "u<i>".
func writersFixture(b *testing.B, n, groups int) (*postgres.Store, *chat.Service) {
	b.Helper()
	ctx := context.Background()
	s, err := postgres.Open(ctx, testDSN(b), &postgres.Options{Schema: newSchema(b), MaxOpenConns: n + 8, CommitGroups: groups})
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	svc, err := chat.New(ctx, s, chat.Config{})
	require.NoError(b, err)
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(b, err)
	for w := 0; w < n; w++ {
		_, err := svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c" + strconv.Itoa(w),
			Type: chat.ChannelTypeStandard, UserIDs: []string{"u" + strconv.Itoa(w)}})
		require.NoError(b, err)
	}
	return s, svc
}

// BenchmarkCreate32Sustained is BenchmarkVsRaw32's create side held for
// a while: 32 goroutines calling Service.CreateMessage, each to its own
// channel, for CHAT_BENCH_DURATION (default 10s) per iteration, against
// one store. BenchmarkVsRaw32's rounds of 1,024 creates end before the
// tables that churn (events_pending, emptied by the relay) hold many
// deleted rows; this one runs in the state a busy server is in. It
// reports creates per second and the CPU time per create of this process
// and of the server's backends.
//
//	go test -run '^$' -bench Create32Sustained -benchtime 1x ./store/postgres/
func BenchmarkCreate32Sustained(b *testing.B) {
	const writers = 32
	d := 10 * time.Second
	if v := os.Getenv("CHAT_BENCH_DURATION"); v != "" {
		var err error
		d, err = time.ParseDuration(v)
		require.NoError(b, err)
	}
	ctx := context.Background()
	s, svc := writersFixture(b, writers, 0)
	var created atomic.Int64
	var took time.Duration
	g0, p0 := cpuSeconds(b, s.DB())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		end := start.Add(d)
		var wg sync.WaitGroup
		var failed atomic.Value
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(end) {
					_, err := svc.CreateMessage(ctx, "u"+strconv.Itoa(w), chat.CreateMessageInput{ChannelID: "c" + strconv.Itoa(w),
						Type: chat.MessageTypeText, Data: chat.TextData("hello, this is a benchmark message of a typical length")})
					if err != nil {
						failed.Store(err)
						return
					}
					created.Add(1)
				}
			}()
		}
		wg.Wait()
		took += time.Since(start)
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	g1, p1 := cpuSeconds(b, s.DB())
	n := float64(created.Load())
	b.ReportMetric(n/took.Seconds(), "creates/s")
	if g1 > g0 {
		b.ReportMetric((g1-g0)/n*1e6, "go-µs/create")
	}
	if p1 > p0 {
		b.ReportMetric((p1-p0)/n*1e6, "pg-µs/create")
	}
}

// cpuSeconds returns the CPU time (user and system) used so far by this
// process and by the server processes of the connections to the current
// database, read from /proc; 0 for what /proc does not show. Processes
// that ended between two calls are not counted.
func cpuSeconds(b *testing.B, db *sql.DB) (self, server float64) {
	b.Helper()
	self = procCPU("self")
	rows, err := db.Query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	require.NoError(b, err)
	defer rows.Close()
	for rows.Next() {
		var pid int
		require.NoError(b, rows.Scan(&pid))
		server += procCPU(strconv.Itoa(pid))
	}
	require.NoError(b, rows.Err())
	return self, server
}

// procCPU reads the user and system time of a process from
// /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s).
func procCPU(pid string) float64 {
	st, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	s, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return (u + s) / 100
}
