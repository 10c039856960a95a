package postgres_test

import (
	"context"
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
)

// TestExplainChannelSearch builds an ANALYZE'd fixture (100,000 channels
// with their search keys, 40 of them named "Zebra Keepers N") and checks
// that a channel search, exactly as QueryChannels builds it, reads
// channel_keys by its primary key and never scans channels or
// channel_keys, in the custom and in the generic plan.
func TestExplainChannelSearch(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a 400,000-row fixture")
	}
	s := newStore(t)
	ctx := ctxT(t)
	db := admin(t)
	channelSearchFixture(t, ctx, s)
	cases := []struct {
		name string
		f    chat.ChannelFilter
		want int
	}{
		{"a word of 40 names", chat.ChannelFilter{Search: chat.SearchKey("Zeb"), Limit: 21}, 21},
		{"a later word", chat.ChannelFilter{Search: chat.SearchKey("keep"), Limit: 21}, 21},
		{"an id", chat.ChannelFilter{Search: chat.SearchKey("CH-9999"), Limit: 21}, 11},
		{"with tags and closed", chat.ChannelFilter{Search: chat.SearchKey("zebra k"), Tags: []string{"t"}, IncludeClosed: true, Limit: 21}, 0},
	}
	for _, c := range cases {
		sqlText, args := s.ChannelQuery(c.f)
		custom, generic := explainBoth(t, ctx, db, sqlText, args)
		t.Logf("%s (custom plan): %s", c.name, custom)
		t.Logf("%s (generic plan): %s", c.name, generic)
		for _, p := range []planNode{custom, generic} {
			used := false
			p.walk(func(n planNode) {
				require.False(t, n.NodeType == "Seq Scan" && (n.Relation == "channels" || n.Relation == "channel_keys"), "%s: plan scans %s: %s", c.name, n.Relation, p)
				if n.IndexName == "channel_keys_pkey" {
					used = true
				}
			})
			require.True(t, used, "%s: plan does not use channel_keys_pkey: %s", c.name, p)
		}
		var got []*chat.Channel
		view(t, s, func(tx chat.Tx) error {
			var err error
			got, err = tx.QueryChannels(ctx, c.f)
			return err
		})
		require.Len(t, got, c.want, c.name)
	}
}

// channelSearchFixture stores 100,000 channels with their search keys
// (40 named "Zebra Keepers N", the others "Room N") by plain SQL, then
// ANALYZEs them.
func channelSearchFixture(tb testing.TB, ctx context.Context, s *postgres.Store) {
	tb.Helper()
	q := pq.QuoteIdentifier(s.Schema())
	db := admin(tb)
	// The keys are what chat.ChannelKeys gives for these ids and names.
	for _, stmt := range []string{
		`INSERT INTO ` + q + `.channels (channel_id, type, display_name, tags, last_activity, created_at, updated_at)
			SELECT 'ch-' || g, 'standard', CASE WHEN g % 2500 = 0 THEN 'Zebra Keepers ' || g ELSE 'Room ' || g END,
				'{}', t, t, t
			FROM generate_series(1, 100000) g, LATERAL (SELECT timestamptz '2024-01-01' + g * interval '1 second' AS t) x`,
		`INSERT INTO ` + q + `.channel_keys (key, channel_id)
			SELECT k, 'ch-' || g FROM generate_series(1, 100000) g,
				LATERAL (VALUES ('ch-' || g), (g::text),
					(CASE WHEN g % 2500 = 0 THEN 'zebra keepers ' || g ELSE 'room ' || g END),
					(CASE WHEN g % 2500 = 0 THEN 'keepers ' || g END)) v(k)
			WHERE k IS NOT NULL
			ON CONFLICT DO NOTHING`,
		`ANALYZE ` + q + `.channels`,
		`ANALYZE ` + q + `.channel_keys`,
	} {
		_, err := db.ExecContext(ctx, stmt)
		require.NoError(tb, err, stmt)
	}
}

// BenchmarkChannelSearch searches the 100,000 channels of
// channelSearchFixture beside the ceiling of the same run: the newest page
// of every channel without a search (channels_created_idx).
//
//	CHAT_TEST_POSTGRES_URL=... go test -run '^$' -bench ChannelSearch -benchtime 2000x ./store/postgres/
func BenchmarkChannelSearch(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	channelSearchFixture(b, ctx, s)
	for _, c := range []struct {
		name string
		f    chat.ChannelFilter
	}{
		{"ceiling: newest page, no search", chat.ChannelFilter{Limit: 21}},
		{"search zeb (40 matches)", chat.ChannelFilter{Search: chat.SearchKey("zeb"), Limit: 21}},
		{"search keepers (a later word, 40 matches)", chat.ChannelFilter{Search: chat.SearchKey("keepers"), Limit: 21}},
		{"search ch-9999 (an id, 11 matches)", chat.ChannelFilter{Search: chat.SearchKey("ch-9999"), Limit: 21}},
		{"search room 1 (11,107 matches)", chat.ChannelFilter{Search: chat.SearchKey("room 1"), Limit: 21}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := s.View(ctx, func(tx chat.Tx) error {
					_, err := tx.QueryChannels(ctx, c.f)
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
