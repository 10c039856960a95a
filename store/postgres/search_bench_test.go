package postgres_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/store/storetest"
)

// BenchmarkSearch measures message search in a channel of 1,000,000
// messages (CHAT_BENCH_SEARCH_MESSAGES overrides the size; see
// storetest.BenchSearch), built through the store in transactions of
// 10,000, then VACUUM ANALYZEd. The fixture lives in a fresh schema, or, when
// CHAT_BENCH_SEARCH_SCHEMA names one, there, kept for later runs:
//
//	CHAT_TEST_POSTGRES_URL=... go test -run '^$' -bench Search -benchtime 200x -timeout 60m ./store/postgres/
func BenchmarkSearch(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("CHAT_BENCH_SEARCH_MESSAGES"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	schema := os.Getenv("CHAT_BENCH_SEARCH_SCHEMA")
	if schema == "" {
		schema = newSchema(b)
	}
	ctx := context.Background()
	s, err := postgres.Open(ctx, testDSN(b), &postgres.Options{Schema: schema, MaxOpenConns: 4})
	require.NoError(b, err)
	defer s.Close()
	if !storetest.SearchFixtureReady(ctx, s, n) {
		start := time.Now()
		require.NoError(b, storetest.BuildSearchFixture(ctx, s, n, 10_000))
		q := pq.QuoteIdentifier(schema)
		// What autovacuum does on a live system: statistics, and the
		// visibility map that lets index-only scans skip the heap.
		_, err = s.DB().Exec(`VACUUM ANALYZE ` + q + `.messages, ` + q + `.message_words`)
		require.NoError(b, err)
		var size string
		require.NoError(b, s.DB().QueryRow(`SELECT pg_size_pretty(pg_total_relation_size($1))`, schema+".message_words").Scan(&size))
		b.Logf("fixture: %d messages, message_words %s with indexes, built in %v", n, size, time.Since(start).Round(time.Second))
	}
	storetest.BenchSearch(b, s, n)
}
