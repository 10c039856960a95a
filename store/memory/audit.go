package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

// ---- audit log ----

func cmpAudit(a, b *chat.AuditEntry) int {
	if c := a.CreatedAt.Compare(b.CreatedAt.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.AuditID, b.AuditID)
}

func cpAudit(e *chat.AuditEntry) *chat.AuditEntry {
	v := *e
	v.Details = copyMap(e.Details)
	return &v
}

// AppendAudit implements chat.AuditStore.
func (t *tx) AppendAudit(_ context.Context, es []*chat.AuditEntry) error {
	if err := t.writable(); err != nil {
		return err
	}
	for _, e := range es {
		if _, ok := t.d.auditIDs[e.AuditID]; ok {
			return chat.Errorf(chat.CodeConflict, "audit entry %q already exists", e.AuditID)
		}
		d, err := normMap(e.Details)
		if err != nil {
			return err
		}
		v := *e
		v.Details = d
		v.CreatedAt = nt(e.CreatedAt)
		setKey(t, t.d.auditIDs, v.AuditID, &v)
		sortedInsert(t, &t.d.audit, &v, cmpAudit)
	}
	return nil
}

// SetAuditDetails implements chat.AuditStore.
func (t *tx) SetAuditDetails(_ context.Context, auditID string, details map[string]any) error {
	if err := t.writable(); err != nil {
		return err
	}
	e, ok := t.d.auditIDs[auditID]
	if !ok {
		return chat.Errorf(chat.CodeNotFound, "audit entry %q not found", auditID)
	}
	d, err := normMap(details)
	if err != nil {
		return err
	}
	// The entry keeps its place in both indexes: only its details change.
	replace(t, &e.Details, d)
	return nil
}

// QueryAudit implements chat.AuditStore.
func (t *tx) QueryAudit(_ context.Context, f chat.AuditFilter) ([]*chat.AuditEntry, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	l := t.d.audit
	var low, high func(*chat.AuditEntry) int
	// Newest first: After (older entries) bounds the ascending list from
	// above, Before (newer entries) from below.
	if c := f.After; c != nil {
		cur := &chat.AuditEntry{CreatedAt: chat.NewTime(c.CreatedAt), AuditID: c.AuditID}
		high = func(e *chat.AuditEntry) int { return cmpAudit(e, cur) }
	}
	if c := f.Before; c != nil {
		cur := &chat.AuditEntry{CreatedAt: chat.NewTime(c.CreatedAt), AuditID: c.AuditID}
		low = func(e *chat.AuditEntry) int { return cmpAudit(e, cur) }
	}
	lo, hi := window(l, low, high)
	var out []*chat.AuditEntry
	walk(l, lo, hi, f.Before == nil, func(e *chat.AuditEntry) bool {
		if (f.ActorID != "" && e.ActorID != f.ActorID) || (f.TargetID != "" && e.TargetID != f.TargetID) ||
			(f.ChannelID != "" && e.ChannelID != f.ChannelID) || (f.Action != "" && e.Action != f.Action) {
			return true
		}
		out = append(out, cpAudit(e))
		return f.Limit <= 0 || len(out) < f.Limit
	})
	return out, nil
}

// ---- purge ----

// SoftDeleteBatch implements chat.PurgeStore. The author's messages are
// kept in creation order, which is not always createdAt order, so the
// matching ones are ordered before the first f.Limit are taken; one batch
// reads every message of the author once.
func (t *tx) SoftDeleteBatch(_ context.Context, f chat.PurgeFilter, now time.Time) ([]*chat.Message, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	mine := t.d.byAuthor[f.UserID]
	if mine == nil {
		return nil, nil
	}
	var since, until int64 = 0, 0
	if !f.Since.IsZero() {
		since = ms(f.Since)
	}
	if !f.Until.IsZero() {
		until = ms(f.Until)
	}
	var after *msg
	if f.After != nil {
		after = &msg{created: ms(f.After.CreatedAt), id: f.After.MessageID}
	}
	cmpMsg := func(a, b *msg) int {
		if c := cmp.Compare(a.created, b.created); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	}
	var found []*msg
	for _, i := range *mine {
		m := t.d.allMsgs[i]
		if m.deleted || (f.ChannelID != "" && t.d.str(m.ch) != f.ChannelID) ||
			(!f.Since.IsZero() && m.created < since) || (!f.Until.IsZero() && m.created > until) ||
			(after != nil && cmpMsg(m, after) <= 0) {
			continue
		}
		found = append(found, m)
		if f.Limit > 0 && len(found) >= 4*f.Limit {
			// Keep the first f.Limit so far: a batch costs one pass over
			// the author's messages, not a sort of all of them.
			slices.SortFunc(found, cmpMsg)
			found = found[:f.Limit]
		}
	}
	slices.SortFunc(found, cmpMsg)
	if f.Limit > 0 && len(found) > f.Limit {
		found = found[:f.Limit]
	}
	at := ms(now)
	out := make([]*chat.Message, 0, len(found))
	for _, m := range found {
		t.softDelete(m, at)
		out = append(out, t.d.message(m))
	}
	return out, nil
}
