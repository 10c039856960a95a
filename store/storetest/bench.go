package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
)

// MemberPageChannels is the number of channels BuildMemberPageFixture
// creates.
const MemberPageChannels = 10_000

// MemberPageUsers are the users of BuildMemberPageFixture by membership
// count: "member-10" is in 10 channels, "member-1000" in 1,000,
// "member-10000" in all 10,000.
var MemberPageUsers = []struct {
	UserID   string
	Channels int
}{
	{"member-10", 10},
	{"member-1000", 1_000},
	{"member-10000", 10_000},
}

// BuildMemberPageFixture fills s with MemberPageChannels channels (one a
// second, ids "page-00000" upwards) and the memberships of
// MemberPageUsers, each user's channels spread evenly over the whole range
// so that a page of one user is interleaved with channels of the others.
// Every third channel is tagged "third", for the filtered benchmark.
func BuildMemberPageFixture(ctx context.Context, s chat.Store) error {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	const batch = 1000
	for lo := 0; lo < MemberPageChannels; lo += batch {
		err := s.Update(ctx, func(tx chat.Tx) error {
			for i := lo; i < lo+batch && i < MemberPageChannels; i++ {
				var tags []string
				if i%3 == 0 {
					tags = []string{"third"}
				}
				c := newChannel(fmt.Sprintf("page-%05d", i), chat.NewTime(start.Add(time.Duration(i)*time.Second)), tags...)
				if err := tx.CreateChannel(ctx, c); err != nil {
					return err
				}
				for _, u := range MemberPageUsers {
					if i%(MemberPageChannels/u.Channels) != 0 {
						continue
					}
					cu := &chat.ChannelUser{ChannelID: c.ChannelID, UserID: u.UserID, Membership: chat.MembershipMember,
						CreatedAt: c.CreatedAt, UpdatedAt: c.CreatedAt}
					if err := tx.PutChannelUser(ctx, cu); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// BenchMemberPages measures, on a store filled by BuildMemberPageFixture,
// the first page of 10 channels of each of MemberPageUsers (QueryChannels
// with MemberOf and Limit 11, as the Service asks for one row more to know
// whether there is a next page), a page in the middle of the list (After a
// cursor), a page with a tag filter, and as the ceiling in the same run the
// cheapest read of 10 channels: GetChannels of 10 ids.
func BenchMemberPages(b *testing.B, s chat.Store) {
	ctx := context.Background()
	run := func(name string, f chat.ChannelFilter, want int) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				err := s.View(ctx, func(tx chat.Tx) error {
					cs, err := tx.QueryChannels(ctx, f)
					if err == nil && len(cs) != want {
						err = fmt.Errorf("got %d channels, want %d", len(cs), want)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, u := range MemberPageUsers {
		want := min(11, u.Channels)
		run(fmt.Sprintf("first/channels=%d", u.Channels), chat.ChannelFilter{MemberOf: u.UserID, Limit: 11}, want)
		// The cursor of the middle channel of the user's list.
		step := MemberPageChannels / u.Channels
		mid := (u.Channels / 2) * step
		cur := &chat.ChannelCursor{CreatedAt: time.Date(2024, 1, 1, 0, 0, mid, 0, time.UTC), ChannelID: fmt.Sprintf("page-%05d", mid)}
		run(fmt.Sprintf("middle/channels=%d", u.Channels), chat.ChannelFilter{MemberOf: u.UserID, After: cur, Limit: 11}, min(11, u.Channels/2))
		tagged := 0
		for i := 0; i < MemberPageChannels; i += step {
			if i%3 == 0 {
				tagged++
			}
		}
		run(fmt.Sprintf("tagged/channels=%d", u.Channels), chat.ChannelFilter{MemberOf: u.UserID, Tags: []string{"third"}, Limit: 11}, min(11, tagged))
	}
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = fmt.Sprintf("page-%05d", MemberPageChannels-1-i*7)
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
