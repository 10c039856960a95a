package chat

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A read of the store that began before a revocation (forget) is not
// cached after it, and entries expire after authCacheTTL.
func TestAdminCache(t *testing.T) {
	var c adminCache
	h := []byte("hash")
	now := time.Now()
	_, gen, ok := c.get(h, now)
	require.False(t, ok)
	c.forget() // a revocation commits while the read is under way
	c.put(h, &Admin{Name: "a"}, now, gen)
	_, _, ok = c.get(h, now)
	require.False(t, ok, "a read from before the revocation was cached")

	_, gen, _ = c.get(h, now)
	c.put(h, &Admin{Name: "a"}, now, gen)
	a, _, ok := c.get(h, now.Add(authCacheTTL-time.Millisecond))
	require.True(t, ok)
	require.Equal(t, "a", a.Name)
	_, _, ok = c.get(h, now.Add(authCacheTTL))
	require.False(t, ok, "expired")
	_, _, ok = c.get(h, now.Add(-time.Millisecond))
	require.False(t, ok, "clock went back")
	c.forget()
	_, _, ok = c.get(h, now)
	require.False(t, ok)
}
