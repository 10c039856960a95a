package chat

import (
	"context"
	"slices"
	"strings"
	"time"
)

// AuditCursor is a keyset position in the newest-first audit order
// (CreatedAt descending, then AuditID descending).
type AuditCursor struct {
	CreatedAt time.Time
	AuditID   string
}

// AuditFilter selects audit entries. Every non-empty field must match
// exactly. Results are newest first (CreatedAt descending, AuditID
// descending); with After set, only entries strictly after that position in
// this order (older ones); with Before set, only entries strictly before it
// (newer ones), returned oldest first so that a caller can page backwards.
// Limit > 0 bounds the count.
type AuditFilter struct {
	ActorID   string
	TargetID  string
	ChannelID string
	Action    string
	After     *AuditCursor
	Before    *AuditCursor
	Limit     int
}

// AuditStore is the audit log: one entry per moderation or administration
// action, written in the transaction of the action.
type AuditStore interface {
	// AppendAudit inserts the entries; CodeConflict when an auditId
	// exists.
	AppendAudit(ctx context.Context, es []*AuditEntry) error
	// SetAuditDetails replaces the details of an entry (an action that
	// spans several transactions, such as a purge, keeps its one entry up
	// to date in each); CodeNotFound if absent.
	SetAuditDetails(ctx context.Context, auditID string, details map[string]any) error
	// QueryAudit returns the entries matching f.
	QueryAudit(ctx context.Context, f AuditFilter) ([]*AuditEntry, error)
}

// PurgeCursor is a keyset position in the (CreatedAt, MessageID)
// ascending order of a purge.
type PurgeCursor struct {
	CreatedAt time.Time
	MessageID string
}

// PurgeFilter selects the live (not deleted) messages of one author for a
// purge, in (CreatedAt, MessageID) ascending order. ChannelID, when set,
// keeps one channel; Since and Until, when not zero, keep messages created
// at or after Since and at or before Until; After continues after a
// position. Limit > 0 bounds the count.
type PurgeFilter struct {
	UserID    string
	ChannelID string
	Since     time.Time
	Until     time.Time
	After     *PurgeCursor
	Limit     int
}

// PurgeStore deletes the messages of one author in bounded batches.
type PurgeStore interface {
	// SoftDeleteBatch marks the messages f selects deleted, as
	// SoftDeleteMessages does (isDeleted true, data {}, updatedAt now),
	// and returns them as stored afterwards, in the filter's order. The
	// cost of one call grows with f.Limit, not with the author's message
	// count: adapters read an index on (userId, createdAt, messageId).
	SoftDeleteBatch(ctx context.Context, f PurgeFilter, now time.Time) ([]*Message, error)
}

// SortPurged orders messages as a purge does: (CreatedAt, MessageID)
// ascending. Adapters whose statement returns rows in another order sort
// with it.
func SortPurged(ms []*Message) {
	slices.SortFunc(ms, func(a, b *Message) int {
		if c := a.CreatedAt.Compare(b.CreatedAt.Time); c != 0 {
			return c
		}
		return strings.Compare(a.MessageID, b.MessageID)
	})
}
