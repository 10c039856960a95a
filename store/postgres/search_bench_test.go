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
		_, err = s.DB().Exec(`VACUUM ANALYZE ` + q + `.messages`)
		require.NoError(b, err)
		var heap, gin, idx, col int64
		require.NoError(b, s.DB().QueryRow(`SELECT pg_relation_size($1), pg_relation_size($2), pg_relation_size($3),
			(SELECT coalesce(sum(pg_column_size(search)), 0) FROM `+q+`.messages)`,
			schema+".messages", schema+".messages_search_idx", schema+".messages_channel_created_idx").Scan(&heap, &gin, &idx, &col))
		b.Logf("fixture: %d messages (heap %d MB, of which the search column %d MB), GIN index %d MB, channel/createdAt index %d MB, built in %v",
			n, heap>>20, col>>20, gin>>20, idx>>20, time.Since(start).Round(time.Second))
	}
	storetest.BenchSearch(b, s, n)
}
