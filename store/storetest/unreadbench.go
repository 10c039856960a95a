package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
)

// The size of BuildUnreadFixture: UnreadChannels channels of
// UnreadMessages messages each, every one with both UnreadReaders as
// members.
const (
	UnreadChannels = 1_000
	UnreadMessages = 10_000
)

// UnreadReaders are the members of every channel of BuildUnreadFixture:
// "reader-none" has read nothing (its marker is 0), "reader-all" is caught
// up (its marker is each channel's latest segment).
var UnreadReaders = []struct {
	UserID string
	Marker func(last int64) int64
}{
	{"reader-none", func(int64) int64 { return 0 }},
	{"reader-all", func(last int64) int64 { return last }},
}

// UnreadAuthor returns the author of the message of segment seg in a
// channel of BuildUnreadFixture: "reader-none" writes one in a thousand
// (its own messages, never unread), "writer" the rest.
func UnreadAuthor(seg int64) string {
	if seg%1000 == 500 {
		return "reader-none"
	}
	return "writer"
}

// UnreadDeleted reports whether the message of segment seg in a channel
// of BuildUnreadFixture is deleted: one in a thousand, of "writer".
func UnreadDeleted(seg int64) bool { return seg%1000 == 250 }

// UnreadMessage returns the message of segment seg of channel channelID
// in BuildUnreadFixture.
func UnreadMessage(channelID string, seg int64, created chat.Time) *chat.Message {
	m := &chat.Message{MessageID: fmt.Sprintf("%s-%05d", channelID, seg), ChannelID: channelID, UserID: UnreadAuthor(seg),
		Type: chat.MessageTypeText, Data: map[string]any{"text": "message " + fmt.Sprint(seg)},
		ChannelSegment: seg, CreatedAt: created, UpdatedAt: created}
	if UnreadDeleted(seg) {
		m.IsDeleted, m.Data = true, map[string]any{}
	}
	return m
}

// UnreadFill stores the messages of segments 1 to n of one channel (made
// by UnreadMessage) and sets the channel's messageCount to n, as
// chat.AppendMessage would one by one. A nil UnreadFill in
// BuildUnreadFixture appends them through the Store (chat.AppendMessage in
// one Update per channel); an adapter may pass a faster bulk write of the
// same rows.
type UnreadFill func(ctx context.Context, s chat.Store, channelID string, n int64, created chat.Time) error

// appendFill is the UnreadFill through the Store.
func appendFill(ctx context.Context, s chat.Store, channelID string, n int64, created chat.Time) error {
	return s.Update(ctx, func(tx chat.Tx) error {
		for seg := int64(1); seg <= n; seg++ {
			m := UnreadMessage(channelID, seg, created)
			if _, err := chat.AppendMessage(ctx, tx, m, created.Time); err != nil {
				return err
			}
			if m.ChannelSegment != seg {
				return fmt.Errorf("%s: segment %d, want %d", channelID, m.ChannelSegment, seg)
			}
		}
		return nil
	})
}

// BuildUnreadFixture fills s with channels channels ("unread-0000"
// upwards, one a second) of messages messages each (UnreadMessage), with
// the memberships and read markers of UnreadReaders. fill writes the
// messages (nil: through the Store).
func BuildUnreadFixture(ctx context.Context, s chat.Store, channels int, messages int64, fill UnreadFill) error {
	if fill == nil {
		fill = appendFill
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range channels {
		created := chat.NewTime(start.Add(time.Duration(i) * time.Second))
		id := fmt.Sprintf("unread-%04d", i)
		if err := s.Update(ctx, func(tx chat.Tx) error {
			if err := tx.CreateChannel(ctx, newChannel(id, created)); err != nil {
				return err
			}
			for _, r := range UnreadReaders {
				cu := &chat.ChannelUser{ChannelID: id, UserID: r.UserID, Membership: chat.MembershipMember, CreatedAt: created, UpdatedAt: created}
				if err := tx.PutChannelUser(ctx, cu); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if err := fill(ctx, s, id, messages, created); err != nil {
			return err
		}
		if err := s.Update(ctx, func(tx chat.Tx) error {
			for _, r := range UnreadReaders {
				if m := r.Marker(messages); m > 0 {
					if _, err := tx.MarkRead(ctx, id, r.UserID, m); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// BenchUnread measures, on a store filled by BuildUnreadFixture with
// messages messages a channel, the store work of a page of 10 of a
// reader's channels: "list" is what a channel query did before unread
// counts (QueryChannels with MemberOf and Limit 11, then ListMemberships
// of the 10), "list+unread" adds UnreadCounts of the 10 relations. Each
// reader of UnreadReaders is measured, in three rounds; every page's
// counts are checked.
// The ceiling in the same run is the cheapest read of 10 channels,
// GetChannels of 10 ids.
func BenchUnread(b *testing.B, s chat.Store, messages int64) {
	ctx := context.Background()
	// Per channel: "writer"'s live messages above the marker.
	wantUnread := func(marker int64) int64 {
		var n int64
		for seg := marker + 1; seg <= messages; seg++ {
			if UnreadAuthor(seg) != "reader-none" && !UnreadDeleted(seg) {
				n++
			}
		}
		return n
	}
	page := func(tx chat.Tx, userID string, unread bool, want int64) error {
		cs, err := tx.QueryChannels(ctx, chat.ChannelFilter{MemberOf: userID, Limit: 11})
		if err != nil {
			return err
		}
		if len(cs) != 11 {
			return fmt.Errorf("got %d channels, want 11", len(cs))
		}
		ids := make([]string, 10)
		for i, c := range cs[:10] {
			ids[i] = c.ChannelID
		}
		cus, err := tx.ListMemberships(ctx, userID, ids)
		if err != nil {
			return err
		}
		if len(cus) != 10 {
			return fmt.Errorf("got %d relations, want 10", len(cus))
		}
		if !unread {
			return nil
		}
		ns, err := chat.UnreadCounts(ctx, tx, cus)
		if err != nil {
			return err
		}
		for i, n := range ns {
			if n != want {
				return fmt.Errorf("%s in %s: unread %d, want %d", userID, cus[i].ChannelID, n, want)
			}
		}
		return nil
	}
	// Three rounds, each measuring both variants back to back, so that a
	// change of the machine's load shows as a spread between rounds rather
	// than as a difference between the variants.
	for round := 1; round <= 3; round++ {
		for _, r := range UnreadReaders {
			want := wantUnread(r.Marker(messages))
			for _, unread := range []bool{false, true} {
				name := "list"
				if unread {
					name = "list+unread"
				}
				b.Run(fmt.Sprintf("%s/%s/round=%d", name, r.UserID, round), func(b *testing.B) {
					for b.Loop() {
						if err := s.View(ctx, func(tx chat.Tx) error { return page(tx, r.UserID, unread, want) }); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = fmt.Sprintf("unread-%04d", i*7)
	}
	b.Run("ceiling/GetChannels=10", func(b *testing.B) {
		for b.Loop() {
			err := s.View(ctx, func(tx chat.Tx) error {
				cs, err := tx.GetChannels(ctx, ids)
				if err == nil && len(cs) != len(ids) {
					err = fmt.Errorf("got %d channels, want %d", len(cs), len(ids))
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
