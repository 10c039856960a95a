package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chatengine/chat/store/storetest"
)

// searchBenchSize is the number of messages of the search fixture:
// CHAT_BENCH_SEARCH_MESSAGES, else 1,000,000.
func searchBenchSize(b *testing.B) int {
	if v := os.Getenv("CHAT_BENCH_SEARCH_MESSAGES"); v != "" {
		n, err := strconv.Atoi(v)
		must(b, err)
		return n
	}
	return 1_000_000
}

// BenchmarkSearch measures message search in a channel of 1,000,000
// messages (see storetest.BenchSearch), built through the store in
// transactions of 10,000. The fixture lives in a temporary directory,
// or, when CHAT_BENCH_SEARCH_DB names a file, there, kept for later runs:
//
//	go test -run '^$' -bench Search -benchtime 200x -timeout 60m ./store/sqlite/
func BenchmarkSearch(b *testing.B) {
	requireCgo(b)
	n := searchBenchSize(b)
	path := os.Getenv("CHAT_BENCH_SEARCH_DB")
	if path == "" {
		path = filepath.Join(b.TempDir(), "search.db")
	}
	ctx := context.Background()
	s, err := Open(ctx, path, &Options{Synchronous: "NORMAL"})
	must(b, err)
	defer s.Close()
	if !storetest.SearchFixtureReady(ctx, s, n) {
		start := time.Now()
		must(b, storetest.BuildSearchFixture(ctx, s, n, 10_000))
		var rows, words int64
		must(b, s.rdb.QueryRowContext(ctx, "SELECT count(*), sum(n) FROM search_docs").Scan(&rows, &words))
		fi, err := os.Stat(path)
		must(b, err)
		b.Logf("fixture: %d messages, %d postings in %d rows, %d MB, built in %v", n, words, rows, fi.Size()>>20, time.Since(start).Round(time.Second))
	}
	storetest.BenchSearch(b, s, n)
}
