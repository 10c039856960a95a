package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/storetest"
)

// BenchmarkCreateWAL measures the write-ahead log bytes per message
// created through the Service (see storetest.BenchCreateWAL) on a store
// whose log is never checkpointed during the measure, so that it only
// grows; the base is CHAT_BENCH_WAL_BASE messages (default 50,000), the
// measure CHAT_BENCH_WAL_CREATES creates (default 3,000):
//
//	go test -run '^$' -bench CreateWAL -benchtime 1x ./store/sqlite/
func BenchmarkCreateWAL(b *testing.B) {
	requireCgo(b)
	base, n := envInt(b, "CHAT_BENCH_WAL_BASE", 50_000), envInt(b, "CHAT_BENCH_WAL_CREATES", 3_000)
	ctx := context.Background()
	var path string
	storetest.BenchCreateWAL(b, func(b *testing.B) chat.Store {
		path = filepath.Join(b.TempDir(), "wal.db")
		s, err := Open(ctx, path, nil)
		must(b, err)
		b.Cleanup(func() { s.Close() })
		return s
	}, func(b *testing.B, s chat.Store) {
		// Empty the log, then stop the automatic checkpoints.
		db, err := sql.Open("sqlite3", dsn(path, nil))
		must(b, err)
		_, err = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
		must(b, err)
		must(b, db.Close())
		must(b, s.Update(ctx, func(ctx2 chat.Tx) error {
			_, err := ctx2.(*tx).exec(ctx, "PRAGMA wal_autocheckpoint = 0")
			return err
		}))
	}, func(b *testing.B, _ chat.Store) func() int64 {
		size := func() int64 {
			fi, err := os.Stat(path + "-wal")
			must(b, err)
			return fi.Size()
		}
		last := size()
		return func() int64 {
			now := size()
			d := now - last
			last = now
			return d
		}
	}, base, n)
}

// envInt returns the integer in the environment variable name, else def.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	must(b, err)
	return n
}
