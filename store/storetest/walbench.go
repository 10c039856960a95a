package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
)

// BenchCreateWAL measures the write-ahead log a message create writes:
// the log bytes (read from the store's database by the function begin
// returns, which reports the bytes since its previous call, called after
// every 200 creates and at the end) over n messages
// created through the Service, one at a time, each its own transaction,
// in a channel that already holds base messages of SearchFixtureText
// (stored through the store, then indexed). Two runs, each on a fresh
// store from open: "words", texts of SearchFixtureText (about ten search
// words each), and "noWords", texts of the same length without a word
// (punctuation), which the search index skips. When the store indexes
// after the commit (chat.SearchIndexer), a chat.Indexer runs during the
// creates, as the example server runs one, and the log of its catch-up
// after the last create is counted. ready, when not nil, runs once the
// base is stored (a store may checkpoint its log there). It reports
// wal-B/create and creates/s. Run it with -benchtime 1x.
func BenchCreateWAL(b *testing.B, open func(b *testing.B) chat.Store, ready func(b *testing.B, s chat.Store), begin func(b *testing.B, s chat.Store) (written func() int64), base, n int) {
	for _, words := range []bool{true, false} {
		name := "noWords"
		if words {
			name = "words"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			s := open(b)
			if err := BuildSearchFixture(ctx, s, base, 10_000); err != nil {
				b.Fatal(err)
			}
			if ready != nil {
				ready(b, s)
			}
			svc, err := chat.New(ctx, s, chat.Config{})
			if err != nil {
				b.Fatal(err)
			}
			admin, _, err := svc.CreateAdmin(ctx, "", "bench", "")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "wal", Type: chat.ChannelTypeStandard}); err != nil {
				b.Fatal(err)
			}
			ix := chat.NewIndexer(s, chat.IndexerConfig{})
			if err := ix.Start(ctx); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for k := 0; k < b.N; k++ {
				written, t0 := begin(b, s), time.Now()
				var bytes int64
				for i := 0; i < n; i++ {
					text := SearchFixtureText(base + k*n + i)
					if !words {
						text = strings.Repeat("-", len(text))
					}
					if _, err := svc.CreateMessage(ctx, admin.UserID, chat.CreateMessageInput{ChannelID: "wal",
						Type: chat.MessageTypeText, Data: map[string]any{"text": text}}); err != nil {
						b.Fatal(err)
					}
					if i%200 == 199 {
						bytes += written()
					}
				}
				elapsed := time.Since(t0)
				if err := ix.Stop(ctx); err != nil {
					b.Fatal(err)
				}
				if err := CatchUpSearch(ctx, s); err != nil {
					b.Fatal(err)
				}
				bytes += written()
				b.ReportMetric(float64(bytes)/float64(n), "wal-B/create")
				b.ReportMetric(float64(n)/elapsed.Seconds(), "creates/s")
				b.Logf("%s: %d creates, %d log bytes", name, n, bytes)
			}
			b.StopTimer()
		})
	}
}
