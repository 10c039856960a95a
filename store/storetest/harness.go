// Package storetest is the conformance suite every chat.Store adapter runs.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Harness{New: func(t *testing.T) chat.Store { ... }})
//	}
package storetest

import (
	"testing"

	chat "github.com/chatengine/chat"
)

// Harness tells Run how to make stores of one adapter.
type Harness struct {
	// New returns a fresh, empty store. It registers its own cleanup with
	// t.Cleanup. It may be called many times, from parallel subtests.
	New func(t *testing.T) chat.Store
	// Reopen, when not nil, closes s and returns a new Store over the same
	// data (a durability round-trip). Adapters without persistence leave it
	// nil and the persistence cases are not applicable to them.
	Reopen func(t *testing.T, s chat.Store) chat.Store
}
