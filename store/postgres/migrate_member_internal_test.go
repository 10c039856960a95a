package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/internal/migrate"
)

// TestMigrateMemberIndex upgrades a schema written before migration 4: the
// relations that exist then get their channel's created_at, so the user's
// channels come in channel order through the new index, and the triggers
// work in the store's schema whatever the search_path of the session.
func TestMigrateMemberIndex(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("CHAT_TEST_POSTGRES_URL")
	if dsn == "" {
		t.Skip("Postgres tests need a server: set CHAT_TEST_POSTGRES_URL, for example " +
			"'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'")
	}
	ctx := context.Background()
	db, err := sql.Open("postgres", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() }) // after the schema's drop below, which uses db
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "chat_test_" + hex.EncodeToString(b[:])
	qs := pq.QuoteIdentifier(schema)
	t.Cleanup(func() {
		if _, err := db.Exec("DROP SCHEMA IF EXISTS " + qs + " CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})

	ms, err := migrations()
	require.NoError(t, err)
	require.Equal(t, "channel_users_member_idx", ms[3].Name)
	require.NoError(t, migrate.Run(ctx, db, dialect(schema), ms[:3]))
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	for _, q := range []string{
		`INSERT INTO ` + qs + `.channels (channel_id, type, display_name, last_activity, created_at, updated_at)
			VALUES ('a', 'standard', 'a', now(), '2024-01-01 00:00:01Z', now()),
			('b', 'standard', 'b', now(), '2024-01-01 00:00:03Z', now()),
			('c', 'standard', 'c', now(), '2024-01-01 00:00:02Z', now()),
			('d', 'standard', 'd', now(), '2024-01-01 00:00:02Z', now())`,
		`INSERT INTO ` + qs + `.channel_users (channel_id, user_id, membership, created_at, updated_at)
			VALUES ('a', 'u', 'member', now(), now()), ('b', 'u', 'member', now(), now()),
			('c', 'u', 'member', now(), now()), ('d', 'u', 'banned', now(), now()),
			('d', 'v', 'member', now(), now()), ('gone', 'u', 'member', now(), now())`,
	} {
		_, err := conn.ExecContext(ctx, q)
		require.NoError(t, err)
	}
	require.NoError(t, conn.Close())

	s, err := Open(ctx, dsn, &Options{Schema: schema, MaxOpenConns: 2})
	require.NoError(t, err)
	defer s.Close()
	list := func() []string {
		var got []string
		require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
			cs, err := tx.QueryChannels(ctx, chat.ChannelFilter{MemberOf: "u"})
			for _, c := range cs {
				got = append(got, c.ChannelID)
			}
			return err
		}))
		return got
	}
	require.Equal(t, []string{"b", "c", "a"}, list())
	var copied, missing int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE cu.channel_created_at = c.created_at),
		(SELECT count(*) FROM `+qs+`.channel_users WHERE channel_created_at IS NULL)
		FROM `+qs+`.channel_users cu JOIN `+qs+`.channels c ON c.channel_id = cu.channel_id`).Scan(&copied, &missing))
	require.Equal(t, 5, copied, "every relation to an existing channel has its created_at")
	require.Equal(t, 1, missing, "the relation to a missing channel has none")

	// The triggers after the upgrade, from sessions on the default
	// search_path: the missing channel arrives, a new relation is added.
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		t0 := chat.NewTime(time.Date(2024, 1, 1, 0, 0, 2, 500_000_000, time.UTC))
		if err := tx.CreateChannel(ctx, &chat.Channel{ChannelID: "gone", Type: chat.ChannelTypeStandard, DisplayName: "g",
			LastActivity: t0, CreatedAt: t0, UpdatedAt: t0}); err != nil {
			return err
		}
		return tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: "d", UserID: "u", Membership: chat.MembershipMember, CreatedAt: t0, UpdatedAt: t0})
	}))
	require.Equal(t, []string{"b", "gone", "d", "c", "a"}, list())
}
