package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
)

// BenchMuteExpiry measures, on a store filled by BuildMemberPageFixture
// (10,000 channels, about 11,000 relations) where 100 channels and 100
// members are muted until later, the idle look of a mute expirer: one
// Update with LapsedMutes (finding nothing) and NextMuteEnd, what every
// process does at least once a second. The ceilings in the same run are
// GetChannels of 10 ids in an Update (which locks the rows, as the look
// does) and in a View.
func BenchMuteExpiry(b *testing.B, s chat.Store) {
	ctx := context.Background()
	later := chat.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	now := later.Add(-time.Hour)
	err := s.Update(ctx, func(tx chat.Tx) error {
		for i := 0; i < MemberPageChannels; i += MemberPageChannels / 100 {
			c, err := tx.GetChannel(ctx, fmt.Sprintf("page-%05d", i))
			if err != nil {
				return err
			}
			c.MuteTimeout = &later
			if err := tx.UpdateChannel(ctx, c); err != nil {
				return err
			}
			cu, err := tx.GetChannelUser(ctx, c.ChannelID, "member-10000")
			if err != nil {
				return err
			}
			cu.MuteTimeout = &later
			if err := tx.PutChannelUser(ctx, cu); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("idle-look", func(b *testing.B) {
		for b.Loop() {
			err := s.Update(ctx, func(tx chat.Tx) error {
				cs, cus, err := tx.LapsedMutes(ctx, now, 100)
				if err != nil {
					return err
				}
				if len(cs)+len(cus) != 0 {
					return fmt.Errorf("%d lapsed", len(cs)+len(cus))
				}
				next, ok, err := tx.NextMuteEnd(ctx)
				if err == nil && (!ok || !next.Equal(later.Time)) {
					err = fmt.Errorf("next mute end %v %v", next, ok)
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = fmt.Sprintf("page-%05d", i*997)
	}
	b.Run("ceiling-update-get-10-channels", func(b *testing.B) {
		for b.Loop() {
			err := s.Update(ctx, func(tx chat.Tx) error {
				cs, err := tx.GetChannels(ctx, ids)
				if err == nil && len(cs) != len(ids) {
					err = fmt.Errorf("got %d channels", len(cs))
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ceiling-get-10-channels", func(b *testing.B) {
		for b.Loop() {
			err := s.View(ctx, func(tx chat.Tx) error {
				cs, err := tx.GetChannels(ctx, ids)
				if err == nil && len(cs) != len(ids) {
					err = fmt.Errorf("got %d channels", len(cs))
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
