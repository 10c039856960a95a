package chat

import (
	"sync"
	"time"
)

// authCacheTTL is how long an admin access token found in the store
// authenticates requests in this process without reading the store again.
// A token revoked or rotated through this Service is refused at once; one
// revoked through another process sharing the store, within authCacheTTL.
const authCacheTTL = time.Second

// authCacheMax bounds the tokens cached; beyond it the cache starts over.
const authCacheMax = 10_000

// adminCache keeps, per admin token hash, the unrevoked admin it belongs
// to and when that was read, so that the requests of an admin (nearly
// every request of a server driven by a backend) cost no read transaction.
// Unknown and revoked tokens are never cached: they are read every time.
type adminCache struct {
	mu sync.Mutex
	m  map[string]adminEntry
	// gen counts the calls of forget, so that a read which began before a
	// revocation committed is not cached after it.
	gen uint64
}

type adminEntry struct {
	admin Admin
	read  time.Time
}

// get returns the cached admin of hash, or false and the generation to
// pass to put after reading the store.
func (c *adminCache) get(hash []byte, now time.Time) (*Admin, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[string(hash)]
	if !ok || now.Sub(e.read) >= authCacheTTL || now.Before(e.read) {
		return nil, c.gen, false
	}
	a := e.admin // a copy: the caller may change it
	return &a, c.gen, true
}

// put caches a, read from the store at read, unless forget was called
// since get returned gen.
func (c *adminCache) put(hash []byte, a *Admin, read time.Time, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.m == nil || len(c.m) >= authCacheMax {
		c.m = map[string]adminEntry{}
	}
	c.m[string(hash)] = adminEntry{admin: *a, read: read}
}

// forget drops every cached token: a revocation or rotation names the
// admin, not its token hash, and is rare.
func (c *adminCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
	c.gen++
}
