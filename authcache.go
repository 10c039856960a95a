package chat

import (
	"maps"
	"slices"
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

// userCache keeps, per user id, the user record that user tokens were last
// checked against (revocation and global ban) and when it was read, so
// that the requests of an end user cost no read transaction to
// authenticate. Changes through this Service to what the check reads
// (RevokeUserTokens, GlobalBan, GlobalUnban, EraseUser, UpdateUser) forget
// the user at once; changes through another process sharing the store are
// seen within authCacheTTL. The Service's operations read the user again
// in their own transactions, so their rights never come from the cache.
type userCache struct {
	mu  sync.Mutex
	m   map[string]userEntry
	gen uint64 // as adminCache.gen
}

type userEntry struct {
	user *User // nil: not stored
	read time.Time
}

// get returns a copy of the cached record of userID (nil, true when the
// user is not stored), or false and the generation to pass to put.
func (c *userCache) get(userID string, now time.Time) (*User, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[userID]
	if !ok || now.Sub(e.read) >= authCacheTTL || now.Before(e.read) {
		return nil, c.gen, false
	}
	if e.user == nil {
		return nil, c.gen, true
	}
	return e.user.clone(), c.gen, true
}

// put caches u (nil: not stored), read at read, unless forget was called
// since get returned gen.
func (c *userCache) put(userID string, u *User, read time.Time, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.m == nil || len(c.m) >= authCacheMax {
		c.m = map[string]userEntry{}
	}
	if u != nil {
		u = u.clone()
	}
	c.m[userID] = userEntry{user: u, read: read}
}

// forget drops the cached record of userID.
func (c *userCache) forget(userID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, userID)
	c.gen++
}

// clone returns a copy of u whose slices and maps (one level deep) are
// its own.
func (u *User) clone() *User {
	c := *u
	c.Roles = slices.Clone(u.Roles)
	c.Metadata = maps.Clone(u.Metadata)
	c.Hashflag.Hash = slices.Clone(u.Hashflag.Hash)
	if u.TokensRevokedAt != nil {
		t := *u.TokensRevokedAt
		c.TokensRevokedAt = &t
	}
	return &c
}
