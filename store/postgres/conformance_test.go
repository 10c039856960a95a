package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/store/storetest"
)

// TestConformance runs the shared store suite; every store gets a fresh
// schema, and Reopen closes the store and opens a new one over the same
// schema.
func TestConformance(t *testing.T) {
	testDSN(t)
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) chat.Store { return newStore(t) },
		Reopen: func(t *testing.T, s chat.Store) chat.Store {
			schema := s.(*postgres.Store).Schema()
			require.NoError(t, s.Close())
			return openStore(t, schema)
		},
	})
}
