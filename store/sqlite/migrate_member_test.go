package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/internal/migrate"
)

// migratedBefore returns a database file migrated up to the migration
// named name (not included), and the database open on it (closed at the
// test's end).
func migratedBefore(t *testing.T, name string) (string, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chat.db")
	db, err := sql.Open("sqlite3", dsn(path, nil))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	ms, err := migrations()
	require.NoError(t, err)
	i := slices.IndexFunc(ms, func(m migrate.Migration) bool { return m.Name == name })
	require.GreaterOrEqual(t, i, 0, name)
	require.NoError(t, migrate.Run(context.Background(), db, dialect, ms[:i]))
	return path, db
}

// execAll runs the statements on db, in order.
func execAll(t *testing.T, db *sql.DB, qs ...string) {
	t.Helper()
	for _, q := range qs {
		_, err := db.ExecContext(context.Background(), q)
		require.NoError(t, err, q)
	}
}

// upgrade closes db and opens the store on path, which runs the
// migrations db has not had; the store is closed at the test's end.
func upgrade(t *testing.T, path string, db *sql.DB) *Store {
	t.Helper()
	require.NoError(t, db.Close())
	s, err := Open(context.Background(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestMigrateMemberIndex upgrades a database written before migration 4:
// the relations that exist then get their channel's created_at, so the
// user's channels come in channel order through the new index.
func TestMigrateMemberIndex(t *testing.T) {
	t.Parallel()
	requireCgo(t)
	ctx := context.Background()
	path, db := migratedBefore(t, "channel_users_member_idx")
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	for _, q := range []string{
		`INSERT INTO channels (channel_id, type, display_name, last_activity, created_at, updated_at)
			VALUES ('a', 'standard', 'a', 1000, 1000, 1000), ('b', 'standard', 'b', 3000, 3000, 3000),
			('c', 'standard', 'c', 2000, 2000, 2000), ('d', 'standard', 'd', 2000, 2000, 2000)`,
		`INSERT INTO channel_users (channel_id, user_id, membership, created_at, updated_at)
			VALUES ('a', 'u', 'member', 0, 0), ('b', 'u', 'member', 0, 0), ('c', 'u', 'member', 0, 0),
			('d', 'u', 'banned', 0, 0), ('d', 'v', 'member', 0, 0), ('gone', 'u', 'member', 0, 0)`,
	} {
		_, err := conn.ExecContext(ctx, q)
		require.NoError(t, err)
	}
	require.NoError(t, conn.Close())
	require.NoError(t, db.Close())

	s, err := Open(ctx, path, nil)
	require.NoError(t, err)
	defer s.Close()
	var got []string
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		cs, err := tx.QueryChannels(ctx, chat.ChannelFilter{MemberOf: "u"})
		for _, c := range cs {
			got = append(got, c.ChannelID)
		}
		return err
	}))
	require.Equal(t, []string{"b", "c", "a"}, got)
	var copied, missing int
	require.NoError(t, s.rdb.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE cu.channel_created_at = c.created_at),
		(SELECT count(*) FROM channel_users WHERE channel_created_at IS NULL)
		FROM channel_users cu JOIN channels c ON c.channel_id = cu.channel_id`).Scan(&copied, &missing))
	require.Equal(t, 5, copied, "every relation to an existing channel has its created_at")
	require.Equal(t, 1, missing, "the relation to a missing channel has none")
}
