package postgres_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestBadInputRefused: values Postgres refuses as input (a NUL byte or
// invalid UTF-8 in text, SQLSTATE 22021) are CodeBadRequest, in an Update
// and in a View, and the refused Update changes nothing, including the
// writes it made before.
func TestBadInputRefused(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error { return tx.CreateChannel(ctx, channel("c", at(0))) })
	bad := []struct {
		name  string
		write func(ctx context.Context, tx chat.Tx) error
	}{
		{"NUL in a display name", func(ctx context.Context, tx chat.Tx) error {
			return tx.CreateUser(ctx, &chat.User{UserID: "u", DisplayName: "a\x00b", CreatedAt: at(0), UpdatedAt: at(0)})
		}},
		{"invalid UTF-8 in an id", func(ctx context.Context, tx chat.Tx) error {
			return tx.CreateChannel(ctx, channel("bad\xff", at(0)))
		}},
		{"NUL in a tag", func(ctx context.Context, tx chat.Tx) error {
			return tx.CreateChannel(ctx, channel("tagged", at(0), "x\x00y"))
		}},
		{"NUL in a message id", func(ctx context.Context, tx chat.Tx) error {
			_, err := chat.AppendMessage(ctx, tx, message("m\x00", "c", "u", 0), t0)
			return err
		}},
		{"NUL in a relation's user id", func(ctx context.Context, tx chat.Tx) error {
			return tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: "c", UserID: "\x00", Membership: chat.MembershipMember, CreatedAt: at(0), UpdatedAt: at(0)})
		}},
	}
	for _, b := range bad {
		err := s.Update(ctx, func(tx chat.Tx) error {
			// A write that would succeed on its own, undone with the rest.
			if _, err := tx.NextSegment(ctx, "c", t0); err != nil {
				return err
			}
			return b.write(ctx, tx)
		})
		require.Error(t, err, b.name)
		require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err), "%s: %v", b.name, err)
	}
	// In JSON, encoding/json writes NUL as \u0000, which the json column
	// keeps: that is no bad input.
	update(t, s, func(tx chat.Tx) error {
		c := channel("c", at(0))
		c.Metadata = map[string]any{"k": "v\x00", "\x00": 1.0}
		return tx.UpdateChannel(ctx, c)
	})
	view(t, s, func(tx chat.Tx) error {
		c, err := tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		require.EqualValues(t, 0, c.MessageCount, "no refused update committed its increment")
		require.Equal(t, map[string]any{"k": "v\x00", "\x00": 1.0}, c.Metadata)
		cus, err := tx.GetChannelUsers(ctx, "c", nil)
		require.NoError(t, err)
		require.Empty(t, cus)
		_, err = tx.GetUser(ctx, "u")
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
		cs, err := tx.QueryChannels(ctx, chat.ChannelFilter{IncludeClosed: true})
		require.NoError(t, err)
		require.Len(t, cs, 1)
		return nil
	})
	// Reads with bad input are refused the same way.
	err := s.View(ctx, func(tx chat.Tx) error {
		_, err := tx.GetChannel(ctx, "c\x00")
		return err
	})
	require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err), "%v", err)
	err = s.Update(ctx, func(tx chat.Tx) error {
		_, err := tx.QueryUsers(ctx, chat.UserFilter{After: &chat.UserCursor{UserID: "\xfe"}})
		return err
	})
	require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err), "%v", err)
}
