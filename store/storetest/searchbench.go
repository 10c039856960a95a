package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
)

// SearchBenchChannel is the channel BuildSearchFixture fills.
const SearchBenchChannel = "search-big"

// searchBenchMarker is the meta key BuildSearchFixture sets when done, to
// the number of messages, so that a kept fixture is recognised.
const searchBenchMarker = "bench.search.fixture"

// searchSyllables make the filler words of the search fixture; none
// starts with the letters of the measured words (h, r, w).
var searchSyllables = []string{"ka", "lo", "mi", "nu", "te", "so", "pi", "da", "fe", "gu", "bo", "ze", "ti", "ma", "ne"}

// searchFiller returns the k-th filler word (of 15*15*15 = 3,375).
func searchFiller(k int) string {
	n := len(searchSyllables)
	return searchSyllables[k%n] + searchSyllables[(k/n)%n] + searchSyllables[(k/n/n)%n]
}

// SearchFixtureText returns the text of message i (from 0) of the search
// fixture: seven filler words drawn with a skewed distribution (a few
// words are very common, most are rare), "hello" in every third message
// (the common word), one of world/work/word/worm in every fourth (the
// prefix "wor"), and "rare%05d" of i modulo 100,000, so each rare word is
// in n/100,000 messages (10 of 1,000,000).
func SearchFixtureText(i int) string {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	var b strings.Builder
	for j := 0; j < 7; j++ {
		if j > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(searchFiller(rng.IntN(rng.IntN(3375) + 1)))
	}
	if i%3 == 0 {
		b.WriteString(" Hello,")
	}
	if i%4 == 0 {
		b.WriteString(" " + []string{"world", "work", "word", "worm"}[(i/4)%4])
	}
	fmt.Fprintf(&b, " rare%05d.", i%100_000)
	return b.String()
}

// SearchFixtureReady reports whether s already holds a complete fixture
// of n messages (a kept one).
func SearchFixtureReady(ctx context.Context, s chat.Store, n int) bool {
	var v string
	err := s.View(ctx, func(tx chat.Tx) error {
		var err error
		v, err = tx.GetMeta(ctx, searchBenchMarker)
		return err
	})
	return err == nil && v == fmt.Sprint(n)
}

// BuildSearchFixture stores n text messages (SearchFixtureText) in channel
// SearchBenchChannel through the store's own CreateMessage, batch messages
// per transaction, one millisecond apart, so the store's search index is
// written by the path every message takes (for a store that indexes after
// the commit, then by its indexer: see CatchUpSearch).
func BuildSearchFixture(ctx context.Context, s chat.Store, n, batch int) error {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	now := chat.NewTime(start)
	if err := s.Update(ctx, func(tx chat.Tx) error {
		return tx.CreateChannel(ctx, newChannel(SearchBenchChannel, now))
	}); err != nil {
		return err
	}
	for lo := 0; lo < n; lo += batch {
		err := s.Update(ctx, func(tx chat.Tx) error {
			for i := lo; i < lo+batch && i < n; i++ {
				at := chat.NewTime(start.Add(time.Duration(i) * time.Millisecond))
				m := &chat.Message{MessageID: fmt.Sprintf("sm%07d", i), ChannelID: SearchBenchChannel,
					UserID: fmt.Sprintf("u%d", i%100), Type: chat.MessageTypeText,
					Data: map[string]any{"text": SearchFixtureText(i)}, ChannelSegment: int64(i + 1),
					CreatedAt: at, UpdatedAt: at}
				if err := tx.CreateMessage(ctx, m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := CatchUpSearch(ctx, s); err != nil {
		return err
	}
	return s.Update(ctx, func(tx chat.Tx) error {
		_, err := tx.PutMetaIfAbsent(ctx, searchBenchMarker, fmt.Sprint(n))
		return err
	})
}

// CatchUpSearch indexes, when s writes its search index after the commit
// (chat.SearchIndexer), every message not yet indexed, in batches of
// 10,000.
func CatchUpSearch(ctx context.Context, s chat.Store) error {
	ix, ok := s.(chat.SearchIndexer)
	if !ok {
		return nil
	}
	for {
		n, err := ix.IndexSearch(ctx, 10_000)
		if err != nil || n == 0 {
			return err
		}
	}
}

// SearchBenchQueries are the searches BenchSearch measures.
var SearchBenchQueries = []struct {
	Name   string
	Search chat.MessageSearch
}{
	{"common", chat.MessageSearch{Words: []string{"hello"}}},
	{"rare", chat.MessageSearch{Words: []string{"rare04242"}}},
	{"twoWordsPrefix", chat.MessageSearch{Words: []string{"hello", "wor"}, Prefix: true}},
	{"rareAndCommon", chat.MessageSearch{Words: []string{"rare04242", "hel"}, Prefix: true}},
}

// BenchSearch measures a page of 20 (the Service asks for 21) of each of
// SearchBenchQueries in the fixture channel, one View per search, and
// reports the median and 99th percentile as p50-ns and p99-ns. The
// ceiling, "page", is the newest page of 21 of the same channel by
// QueryMessages (one index range), measured in the same run. Beside the
// big channel it adds (once) a small channel of 30 messages that all hold
// the common word, and measures "hello" in that channel (smallChannel),
// by a member of the small channel only (smallMember) and by a member of
// both (bigMember): the common word has 333,334 rows in the big channel.
func BenchSearch(b *testing.B, s chat.Store, n int) {
	ctx := context.Background()
	type run struct {
		name string
		fn   func(tx chat.Tx) (int, error)
	}
	if err := searchSmallChannel(ctx, s); err != nil {
		b.Fatal(err)
	}
	if err := CatchUpSearch(ctx, s); err != nil {
		b.Fatal(err)
	}
	var runs []run
	runs = append(runs, run{"page", func(tx chat.Tx) (int, error) {
		ms, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: SearchBenchChannel, Descending: true, Limit: 21})
		return len(ms), err
	}})
	for _, q := range SearchBenchQueries {
		f := q.Search
		f.ChannelID, f.Limit = SearchBenchChannel, 21
		runs = append(runs, run{q.Name, func(tx chat.Tx) (int, error) {
			ms, err := tx.SearchMessages(ctx, f)
			return len(ms), err
		}})
	}
	// A user's search of its channels: a reader of the small channel only
	// (the common word has few rows there), and one of both channels.
	for _, c := range []struct{ name, user string }{{"smallMember", "search-reader-small"}, {"bigMember", "search-reader-big"}} {
		f := chat.MessageSearch{Words: []string{"hello"}, MemberOf: c.user, Limit: 21}
		runs = append(runs, run{c.name, func(tx chat.Tx) (int, error) {
			ms, err := tx.SearchMessages(ctx, f)
			return len(ms), err
		}})
	}
	runs = append(runs, run{"smallChannel", func(tx chat.Tx) (int, error) {
		ms, err := tx.SearchMessages(ctx, chat.MessageSearch{Words: []string{"hello"}, ChannelID: "search-small", Limit: 21})
		return len(ms), err
	}})
	for _, r := range runs {
		b.Run(r.name, func(b *testing.B) {
			durs := make([]time.Duration, 0, b.N)
			var got int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if err := s.View(ctx, func(tx chat.Tx) error {
					var err error
					got, err = r.fn(tx)
					return err
				}); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(start))
			}
			b.StopTimer()
			want := 21
			if r.name == "rare" || r.name == "rareAndCommon" {
				// rare04242 is in messages i = 4242 + k*100,000;
				// "hello" in those divisible by 3.
				want = 0
				for i := 4242; i < n; i += 100_000 {
					if r.name == "rare" || i%3 == 0 {
						want++
					}
				}
			}
			if got != want {
				b.Fatalf("%s: %d messages, want %d", r.name, got, want)
			}
			slices.Sort(durs)
			b.ReportMetric(float64(durs[len(durs)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(durs[len(durs)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}

// searchSmallChannel adds, unless present, channel "search-small" with 30
// messages holding "hello", the user "search-reader-small" as its member
// and "search-reader-big" as a member of it and of SearchBenchChannel.
func searchSmallChannel(ctx context.Context, s chat.Store) error {
	return s.Update(ctx, func(tx chat.Tx) error {
		if _, err := tx.GetChannel(ctx, "search-small"); err == nil {
			return nil
		}
		start := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
		now := chat.NewTime(start)
		if err := tx.CreateChannel(ctx, newChannel("search-small", now)); err != nil {
			return err
		}
		for i := 0; i < 30; i++ {
			at := chat.NewTime(start.Add(time.Duration(i) * time.Second))
			m := &chat.Message{MessageID: fmt.Sprintf("small%02d", i), ChannelID: "search-small", UserID: "u0",
				Type: chat.MessageTypeText, Data: map[string]any{"text": fmt.Sprintf("hello from the small channel %d", i)},
				ChannelSegment: int64(i + 1), CreatedAt: at, UpdatedAt: at}
			if err := tx.CreateMessage(ctx, m); err != nil {
				return err
			}
		}
		for _, cu := range []*chat.ChannelUser{
			{ChannelID: "search-small", UserID: "search-reader-small"},
			{ChannelID: "search-small", UserID: "search-reader-big"},
			{ChannelID: SearchBenchChannel, UserID: "search-reader-big"},
		} {
			cu.Membership, cu.CreatedAt, cu.UpdatedAt = chat.MembershipMember, now, now
			if err := tx.PutChannelUser(ctx, cu); err != nil {
				return err
			}
		}
		return nil
	})
}
