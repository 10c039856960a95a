//go:build cgo

// The example needs the SQLite driver, so it is built only with cgo (an
// example cannot skip); TestOpenWithoutCgo covers the other build.

package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/sqlite"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "chat-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "chat.db"), nil) // FULL durability, WAL
	if err != nil {
		panic(err)
	}
	defer s.Close()

	now := chat.NewTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	err = s.Update(ctx, func(tx chat.Tx) error {
		return tx.CreateChannel(ctx, &chat.Channel{ChannelID: "general", Type: chat.ChannelTypeStandard,
			DisplayName: "General", LastActivity: now, CreatedAt: now, UpdatedAt: now})
	})
	if err != nil {
		panic(err)
	}
	err = s.View(ctx, func(tx chat.Tx) error {
		c, err := tx.GetChannel(ctx, "general")
		if err != nil {
			return err
		}
		fmt.Println(c.DisplayName, c.CreatedAt.Format(chat.TimeLayout))
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output: General 2024-01-02T03:04:05.000Z
}
