package sqlite

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/storetest"
)

// TestConformance runs the shared store suite: every case on a fresh
// database file, and the persistence cases through Close and Open of the
// same file.
func TestConformance(t *testing.T) {
	requireCgo(t)
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) chat.Store { return newStore(t, nil) },
		Reopen: func(t *testing.T, s chat.Store) chat.Store {
			old := s.(*Store)
			require.NoError(t, old.Close())
			ns, err := Open(context.Background(), old.Path(), nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = ns.Close() })
			return ns
		},
	})
}
