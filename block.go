package chat

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"
)

// MaxBlocks is how many users one user may block.
const MaxBlocks = 1000

// Block is one user's block of another: BlockedID's messages, reactions
// and typing no longer reach UserID (docs/api.md, "Blocking").
type Block struct {
	UserID    string `json:"userId"`
	BlockedID string `json:"blockedId"`
	CreatedAt Time   `json:"createdAt"`
}

// BlockList is the response of the block endpoints: a user's blocks,
// oldest first, and the blocked users.
type BlockList struct {
	Blocks []Block `json:"blocks"`
	Users  []User  `json:"users"`
}

// BlockStore persists blocks.
type BlockStore interface {
	// PutBlock records that userID blocks blockedID at now and reports
	// whether it is new (a block already there is kept as it is).
	PutBlock(ctx context.Context, userID, blockedID string, now time.Time) (bool, error)
	// DeleteBlock deletes the block and reports whether there was one.
	DeleteBlock(ctx context.Context, userID, blockedID string) (bool, error)
	// ListBlocks returns the blocks of userID, oldest first (then by
	// blocked id).
	ListBlocks(ctx context.Context, userID string) ([]*Block, error)
	// BlockersAmong returns the users among userIDs who block blockedID,
	// in no order.
	BlockersAmong(ctx context.Context, blockedID string, userIDs []string) ([]string, error)
}

// The internal events of blocking (see IsInternalEvent): every process's
// event stream hub learns from them which users a subscriber blocks.
// Their data is BlockEventData; Event.UserIDs names the blocker.
const (
	EventUserDidBlock   = "user.didBlock"
	EventUserDidUnblock = "user.didUnblock"
)

// BlockEventData is the data of user.didBlock and user.didUnblock.
type BlockEventData struct {
	UserID    string `json:"userId"`
	BlockedID string `json:"blockedId"`
}

// BlockEvent decodes the data of user.didBlock or user.didUnblock; ok is
// false for any other event or undecodable data.
func BlockEvent(e *Event) (d BlockEventData, ok bool) {
	if e.Name != EventUserDidBlock && e.Name != EventUserDidUnblock {
		return d, false
	}
	return d, json.Unmarshal(e.Data, &d) == nil
}

// blockAction is the action on userID's blocks by actorID: its own, or
// anyone's for an admin.
func blockAction(actorID, userID string) action {
	if actorID == userID {
		return actBlockSelf
	}
	return actBlockOthers
}

// BlockUser records that userID blocks blockedID (the acting user itself,
// or anyone when the actor is an admin). Blocking again is a no-op.
// Returns userID's blocks. Errors: CodeBadRequest (validation, a user
// blocking itself, more than MaxBlocks), CodePermissionDenied,
// CodeGlobalBanned.
func (s *Service) BlockUser(ctx context.Context, actorID, userID, blockedID string) (*BlockList, error) {
	if err := s.checkID("userId", userID); err != nil {
		return nil, err
	}
	if err := s.checkID("userId", blockedID); err != nil {
		return nil, err
	}
	if userID == blockedID {
		return nil, invalid("userId", "a user cannot block itself")
	}
	now := s.Now()
	var out *BlockList
	err := s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, blockAction(actorID, userID), ""); err != nil {
			return err
		}
		bs, err := tx.ListBlocks(ctx, userID)
		if err != nil {
			return err
		}
		for _, b := range bs {
			if b.BlockedID == blockedID {
				out, err = s.blockList(ctx, tx, bs)
				return err
			}
		}
		if len(bs) >= MaxBlocks {
			return invalid("userId", "a user blocks at most %d users", MaxBlocks)
		}
		if _, err := tx.EnsureUsers(ctx, []string{userID, blockedID}, now.Time); err != nil {
			return err
		}
		if _, err := tx.PutBlock(ctx, userID, blockedID, now.Time); err != nil {
			return err
		}
		ev.add(EventUserDidBlock, BlockEventData{UserID: userID, BlockedID: blockedID})
		bs = append(bs, &Block{UserID: userID, BlockedID: blockedID, CreatedAt: now})
		out, err = s.blockList(ctx, tx, bs)
		return err
	})
	s.blocks.forget(userID)
	return out, err
}

// UnblockUser deletes userID's block of blockedID (the acting user's own,
// or anyone's for an admin). Unblocking a user not blocked is a no-op.
// Returns userID's blocks. Errors: CodeBadRequest, CodePermissionDenied,
// CodeGlobalBanned.
func (s *Service) UnblockUser(ctx context.Context, actorID, userID, blockedID string) (*BlockList, error) {
	if err := s.checkID("userId", userID); err != nil {
		return nil, err
	}
	if err := s.checkID("userId", blockedID); err != nil {
		return nil, err
	}
	var out *BlockList
	err := s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, blockAction(actorID, userID), ""); err != nil {
			return err
		}
		deleted, err := tx.DeleteBlock(ctx, userID, blockedID)
		if err != nil {
			return err
		}
		if deleted {
			ev.add(EventUserDidUnblock, BlockEventData{UserID: userID, BlockedID: blockedID})
		}
		bs, err := tx.ListBlocks(ctx, userID)
		if err != nil {
			return err
		}
		out, err = s.blockList(ctx, tx, bs)
		return err
	})
	s.blocks.forget(userID)
	return out, err
}

// ListBlocks returns userID's blocks, oldest first, with the blocked users
// (the acting user's own, or anyone's for an admin). Errors:
// CodeBadRequest, CodePermissionDenied, CodeGlobalBanned.
func (s *Service) ListBlocks(ctx context.Context, actorID, userID string) (*BlockList, error) {
	if err := s.checkID("userId", userID); err != nil {
		return nil, err
	}
	var out *BlockList
	err := s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, blockAction(actorID, userID), ""); err != nil {
			return err
		}
		bs, err := tx.ListBlocks(ctx, userID)
		if err != nil {
			return err
		}
		out, err = s.blockList(ctx, tx, bs)
		return err
	})
	return out, err
}

func (s *Service) blockList(ctx context.Context, tx Tx, bs []*Block) (*BlockList, error) {
	out := &BlockList{Blocks: make([]Block, 0, len(bs))}
	ids := make([]string, 0, len(bs))
	for _, b := range bs {
		out.Blocks = append(out.Blocks, *b)
		ids = append(ids, b.BlockedID)
	}
	us, err := tx.GetUsers(ctx, ids)
	if err != nil {
		return nil, err
	}
	out.Users = userValues(us)
	for i := range out.Users {
		presentUser(&out.Users[i])
	}
	sort.Slice(out.Users, func(i, j int) bool { return out.Users[i].UserID < out.Users[j].UserID })
	return out, nil
}

// blockCacheTTL is how long a user's blocks read from the store serve
// its queries in this process. Blocks made or lifted through this Service
// take effect at once; those made through another process sharing the
// store, within blockCacheTTL.
const blockCacheTTL = time.Second

// blockCacheMax bounds the users whose blocks are cached; beyond it the
// cache starts over.
const blockCacheMax = 100_000

// blockCache keeps, per user, the users it blocks (nil: none) and when
// that was read, so that the message and reactor queries of a user who
// blocks nobody (nearly every query) cost no extra statement.
type blockCache struct {
	mu sync.Mutex
	m  map[string]blockEntry
}

type blockEntry struct {
	set  map[string]bool
	read time.Time
}

func (c *blockCache) get(userID string, now time.Time) (map[string]bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[userID]
	if !ok || now.Sub(e.read) >= blockCacheTTL || now.Before(e.read) {
		return nil, false
	}
	return e.set, true
}

func (c *blockCache) put(userID string, set map[string]bool, read time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= blockCacheMax {
		c.m = map[string]blockEntry{}
	}
	c.m[userID] = blockEntry{set: set, read: read}
}

func (c *blockCache) forget(userID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, userID)
}

// blockedSet returns the users userID blocks (nil when none), from the
// cache when it was read less than blockCacheTTL ago. The set is shared:
// read only.
func (s *Service) blockedSet(ctx context.Context, tx Tx, userID string) (map[string]bool, error) {
	now := time.Now() // the cache's own clock, not the Service's
	if set, ok := s.blocks.get(userID, now); ok {
		return set, nil
	}
	bs, err := tx.ListBlocks(ctx, userID)
	if err != nil {
		return nil, err
	}
	var set map[string]bool
	if len(bs) > 0 {
		set = make(map[string]bool, len(bs))
		for _, b := range bs {
			set[b.BlockedID] = true
		}
	}
	s.blocks.put(userID, set, now)
	return set, nil
}

// checkNotBlocked refuses (CodePermissionDenied) when a user of ids other
// than actorID blocks actorID: a blocked user cannot add its blocker to a
// channel. Admins are not refused (cl.admin).
func checkNotBlocked(ctx context.Context, tx Tx, cl *caller, actorID string, ids []string) error {
	if cl.admin {
		return nil
	}
	others := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != actorID {
			others = append(others, id)
		}
	}
	if len(others) == 0 {
		return nil
	}
	bl, err := tx.BlockersAmong(ctx, actorID, others)
	if err != nil || len(bl) == 0 {
		return err
	}
	sort.Strings(bl)
	return &Error{Code: CodePermissionDenied, Message: "user " + quote(actorID) + " may not add user " + quote(bl[0]) + " to channels",
		Detail: []Detail{UserRef{UserID: bl[0]}}}
}

// withoutAuthors returns ms without the messages whose author is in
// blocked (ms itself when none is).
func withoutAuthors(ms []*Message, blocked map[string]bool) []*Message {
	if len(blocked) == 0 {
		return ms
	}
	out := make([]*Message, 0, len(ms))
	for _, m := range ms {
		if !blocked[m.UserID] {
			out = append(out, m)
		}
	}
	return out
}
