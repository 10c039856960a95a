package postgres_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/store/storetest"
)

// BenchmarkCreateWAL measures the write-ahead log bytes per message
// created through the Service (see storetest.BenchCreateWAL), each run on
// a fresh schema, after a CHECKPOINT (so full-page images are counted as
// after every checkpoint). The log is shared by every database of the
// server: the bench counts, with pg_walinspect, only the records that
// change a relation of its schema (commit records, about 40 bytes a
// transaction, are left out), read every 200 creates, the log kept by a
// temporary replication slot of the bench's session. Full-page images, written for the first change of a
// page after a checkpoint, come and go with the checkpoints (other
// sessions' and the server's timing), so it reports them apart
// (fpi-B/create) from the records without them (wal-B/create). The base is CHAT_BENCH_WAL_BASE messages
// (default 50,000), the measure CHAT_BENCH_WAL_CREATES creates (default
// 3,000):
//
//	CHAT_TEST_POSTGRES_URL=... go test -run '^$' -bench CreateWAL -benchtime 1x ./store/postgres/
func BenchmarkCreateWAL(b *testing.B) {
	base, n := envInt(b, "CHAT_BENCH_WAL_BASE", 50_000), envInt(b, "CHAT_BENCH_WAL_CREATES", 3_000)
	ctx := context.Background()
	db := admin(b)
	_, err := db.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect")
	require.NoError(b, err)
	var schema string
	storetest.BenchCreateWAL(b, func(b *testing.B) chat.Store {
		schema = newSchema(b)
		s, err := postgres.Open(ctx, testDSN(b), &postgres.Options{Schema: schema})
		require.NoError(b, err)
		b.Cleanup(func() { s.Close() })
		return s
	}, func(b *testing.B, s chat.Store) {
		_, err := db.ExecContext(ctx, "VACUUM ANALYZE "+pq.QuoteIdentifier(schema)+".messages")
		require.NoError(b, err)
		_, err = db.ExecContext(ctx, "CHECKPOINT")
		require.NoError(b, err)
	}, func(b *testing.B, _ chat.Store) func() int64 {
		// A temporary replication slot keeps the log from the start of the
		// measure until the bench's session ends (the server recycles it
		// at checkpoints otherwise).
		conn, err := db.Conn(ctx)
		require.NoError(b, err)
		slot := "chat_wal_bench_" + strconv.Itoa(os.Getpid())
		b.Cleanup(func() {
			_, _ = conn.ExecContext(ctx, "SELECT pg_drop_replication_slot($1)", slot)
			conn.Close()
		})
		_, err = conn.ExecContext(ctx, "SELECT pg_create_physical_replication_slot($1, true, true)", slot)
		require.NoError(b, err)
		var from string
		require.NoError(b, conn.QueryRowContext(ctx, "SELECT pg_current_wal_flush_lsn()::text").Scan(&from))
		var fpiSum int64
		return func() int64 {
			var bytes, fpi int64
			var to string
			var ahead bool
			require.NoError(b, conn.QueryRowContext(ctx, "SELECT pg_current_wal_flush_lsn() > $1::pg_lsn", from).Scan(&ahead))
			if !ahead {
				return 0 // nothing flushed since the last read
			}
			require.NoError(b, conn.QueryRowContext(ctx, `WITH rels AS (
					SELECT '/' || d.oid || '/' || c.relfilenode || ' fork' AS ref
					FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
					CROSS JOIN (SELECT oid FROM pg_database WHERE datname = current_database()) d
					WHERE ns.nspname = $2 AND c.relfilenode <> 0), e AS (SELECT pg_current_wal_flush_lsn() AS lsn)
				SELECT coalesce(sum(r.record_length - r.fpi_length), 0), coalesce(sum(r.fpi_length), 0), (SELECT lsn FROM e)::text
				FROM pg_get_wal_records_info($1::pg_lsn, (SELECT lsn FROM e)) r
				WHERE EXISTS (SELECT 1 FROM rels WHERE strpos(r.block_ref, rels.ref) > 0)`, from, schema).Scan(&bytes, &fpi, &to))
			from = to
			fpiSum += fpi
			b.ReportMetric(float64(fpiSum)/float64(n), "fpi-B/create")
			return bytes
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
	require.NoError(b, err)
	return n
}
