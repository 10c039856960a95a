// Package pgtest gives tests the PostgreSQL server to run against.
//
// Tests call URL(t). It returns CHAT_TEST_POSTGRES_URL when set. When it is
// not set the test is skipped with a message saying how to run it, unless
// CHAT_REQUIRE_POSTGRES is set (as .ci/run does), in which case the test
// fails: in CI the Postgres suites never skip silently.
package pgtest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
)

// Env is the variable that names the test database.
const Env = "CHAT_TEST_POSTGRES_URL"

// URL returns the test database URL or skips (fails under
// CHAT_REQUIRE_POSTGRES) when none is configured.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(Env)
	if u == "" {
		msg := "PostgreSQL tests need a server: set " + Env + "=postgres://postgres@127.0.0.1:5432/test?sslmode=disable (any database you may create schemas in)"
		if os.Getenv("CHAT_REQUIRE_POSTGRES") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return u
}

// SchemaName returns a fresh random schema name for one test store.
func SchemaName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "chat_test_" + hex.EncodeToString(b[:])
}
