package memory

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

// ---- admins and admin panel sessions ----

// adminByHash returns the admin whose token hash is hash, or nil.
func (d *data) adminByHash(hash []byte) *chat.Admin {
	for _, a := range d.admins {
		if bytes.Equal(a.TokenHash, hash) {
			return a
		}
	}
	return nil
}

func (t *tx) CreateAdmin(_ context.Context, a *chat.Admin) error {
	if t.r().adminByHash(a.TokenHash) != nil {
		return conflict("admin token already in use")
	}
	return insert(t, t.r().admins, a.Name, cloneAdmin(a), "admin")
}

func (t *tx) GetAdminByTokenHash(_ context.Context, hash []byte) (*chat.Admin, error) {
	if a := t.r().adminByHash(hash); a != nil {
		return cloneAdmin(a), nil
	}
	return nil, chat.Errorf(chat.CodeNotFound, "admin token not found")
}

func (t *tx) GetAdmin(_ context.Context, name string) (*chat.Admin, error) {
	return get(t, t.r().admins, name, cloneAdmin, "admin")
}

func (t *tx) ListAdmins(_ context.Context) ([]*chat.Admin, error) {
	return copies(sortedValues(t.r().admins, nil, func(a, b *chat.Admin) int { return cmp.Compare(a.Name, b.Name) }), cloneAdmin), nil
}

func (t *tx) RevokeAdmin(_ context.Context, name string, now time.Time) error {
	return change(t, t.r().admins, name, "admin", func(a *chat.Admin) { a.RevokedAt = cmp.Or(a.RevokedAt, chat.TimePtr(now)) })
}

func (t *tx) RotateAdmin(_ context.Context, name string, hash []byte) error {
	if other := t.r().adminByHash(hash); other != nil && other.Name != name {
		return conflict("admin token already in use")
	}
	return change(t, t.r().admins, name, "admin", func(a *chat.Admin) { a.TokenHash, a.RevokedAt = bytes.Clone(hash), nil })
}

func (t *tx) SetAdminPassword(_ context.Context, name string, hash []byte) error {
	return change(t, t.r().admins, name, "admin", func(a *chat.Admin) {
		a.PasswordHash = nil
		if len(hash) > 0 {
			a.PasswordHash = bytes.Clone(hash)
		}
	})
}

func (t *tx) CreateAdminSession(_ context.Context, s *chat.AdminSession) error {
	return insert(t, t.r().sessions, string(s.IDHash), cloneSession(s), "admin session")
}

func (t *tx) GetAdminSession(_ context.Context, idHash []byte) (*chat.AdminSession, error) {
	return get(t, t.r().sessions, string(idHash), cloneSession, "admin session")
}

func (t *tx) TouchAdminSession(_ context.Context, idHash []byte, now time.Time) error {
	return change(t, t.r().sessions, string(idHash), "admin session", func(s *chat.AdminSession) { s.LastSeenAt = chat.NewTime(now) })
}

func (t *tx) DeleteAdminSession(_ context.Context, idHash []byte) error {
	del(t, t.r().sessions, string(idHash))
	return nil
}

func (t *tx) DeleteAdminSessions(_ context.Context, name string) (int, error) {
	return deleteWhere(t, t.r().sessions, func(s *chat.AdminSession) bool { return s.Name == name }, 0), nil
}

func (t *tx) DeleteIdleAdminSessions(_ context.Context, cutoff time.Time) (int, error) {
	c := chat.NewTime(cutoff)
	return deleteWhere(t, t.r().sessions, func(s *chat.AdminSession) bool { return s.LastSeenAt.Before(c.Time) }, 0), nil
}

// ---- the event log ----

// AppendEvents assigns the next ids under the store's write lock, which
// serializes transactions: ids follow commit order.
func (t *tx) AppendEvents(_ context.Context, es []*chat.Event) error {
	id, list := t.r().lastEventID, t.r().events
	for _, e := range es {
		id++
		e.ID = id
		list = append(list, cloneEvent(e))
		t.signal |= sigEvents
	}
	set(t, &t.r().events, list)
	set(t, &t.r().lastEventID, id)
	return nil
}

func (t *tx) ReadEvents(_ context.Context, after int64, limit int) ([]*chat.Event, error) {
	i, _ := slices.BinarySearchFunc(t.r().events, after+1, func(e *chat.Event, id int64) int { return cmp.Compare(e.ID, id) })
	return copies(first(t.r().events[i:], limit), cloneEvent), nil
}

func (t *tx) LastEventID(_ context.Context) (int64, error) {
	return t.r().lastEventID, nil
}

func (t *tx) DeleteEventsBefore(_ context.Context, before time.Time, limit int) (int, error) {
	l := t.r().events
	n := 0
	for n < len(l) && (limit <= 0 || n < limit) && l[n].CreatedAt.Before(before) {
		n++
	}
	if n > 0 {
		set(t, &t.r().events, l[n:])
	}
	return n, nil
}

// ---- audit log and reports ----

// newest orders by createdAt then id, newest first.
func newest(at1, at2 chat.Time, id1, id2 string) int {
	return cmp.Or(at2.Compare(at1.Time), cmp.Compare(id2, id1))
}

func newestAudit(a, b *chat.AuditEntry) int {
	return newest(a.CreatedAt, b.CreatedAt, a.AuditID, b.AuditID)
}

func (t *tx) AppendAudit(_ context.Context, es []*chat.AuditEntry) error {
	for _, e := range es {
		v := cloneAudit(e)
		var err error
		if v.Details, err = normMap(e.Details); err != nil {
			return err
		}
		if err := insert(t, t.r().audit, v.AuditID, v, "audit entry"); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) SetAuditDetails(_ context.Context, auditID string, details map[string]any) error {
	d, err := normMap(details)
	if err != nil {
		return err
	}
	return change(t, t.r().audit, auditID, "audit entry", func(e *chat.AuditEntry) { e.Details = d })
}

func (t *tx) QueryAudit(_ context.Context, f chat.AuditFilter) ([]*chat.AuditEntry, error) {
	l := sortedValues(t.r().audit, func(e *chat.AuditEntry) bool {
		return (f.ActorID == "" || e.ActorID == f.ActorID) && (f.TargetID == "" || e.TargetID == f.TargetID) &&
			(f.ChannelID == "" || e.ChannelID == f.ChannelID) && (f.Action == "" || e.Action == f.Action)
	}, newestAudit)
	cursor := func(c *chat.AuditCursor) func(*chat.AuditEntry) int {
		if c == nil {
			return nil
		}
		return func(e *chat.AuditEntry) int {
			return newest(e.CreatedAt, chat.NewTime(c.CreatedAt), e.AuditID, c.AuditID)
		}
	}
	return copies(window(l, cursor(f.After), cursor(f.Before), 0, f.Limit), cloneAudit), nil
}

func newestReport(a, b *chat.Report) int {
	return newest(a.CreatedAt, b.CreatedAt, a.ReportID, b.ReportID)
}

// openReport returns CodeConflict when r is open and its reporter has
// another open report of its target.
func (d *data) openReport(r *chat.Report) error {
	for _, o := range d.reports {
		if r.State == chat.ReportOpen && o.State == chat.ReportOpen && o.ReportID != r.ReportID &&
			o.ReporterID == r.ReporterID && o.TargetType == r.TargetType && o.TargetID == r.TargetID {
			return conflict("user %q already has an open report of %s %q", r.ReporterID, r.TargetType, r.TargetID)
		}
	}
	return nil
}

func (t *tx) CreateReport(_ context.Context, r *chat.Report) error {
	if _, ok := t.r().reports[r.ReportID]; !ok {
		if err := t.r().openReport(r); err != nil {
			return err
		}
	}
	return insert(t, t.r().reports, r.ReportID, cloneReport(r), "report")
}

func (t *tx) GetReport(_ context.Context, reportID string) (*chat.Report, error) {
	return get(t, t.r().reports, reportID, cloneReport, "report")
}

func (t *tx) UpdateReport(_ context.Context, r *chat.Report) error {
	if p, ok := t.r().reports[r.ReportID]; ok {
		v := *p
		v.State = r.State
		if err := t.r().openReport(&v); err != nil {
			return err
		}
	}
	in := cloneReport(r)
	return change(t, t.r().reports, r.ReportID, "report", func(v *chat.Report) {
		v.Note, v.State, v.Resolution, v.ResolvedAt = in.Note, in.State, in.Resolution, in.ResolvedAt
	})
}

func (t *tx) QueryReports(_ context.Context, f chat.ReportFilter) ([]*chat.Report, error) {
	l := sortedValues(t.r().reports, func(r *chat.Report) bool {
		return (f.State == "" || r.State == f.State) && (f.TargetType == "" || r.TargetType == f.TargetType) &&
			(f.ReporterID == "" || r.ReporterID == f.ReporterID)
	}, newestReport)
	cursor := func(c *chat.ReportCursor) func(*chat.Report) int {
		if c == nil {
			return nil
		}
		return func(r *chat.Report) int {
			return newest(r.CreatedAt, chat.NewTime(c.CreatedAt), r.ReportID, c.ReportID)
		}
	}
	return copies(window(l, cursor(f.After), cursor(f.Before), 0, f.Limit), cloneReport), nil
}

// ---- stream tickets, meta and blobs ----

func (t *tx) PutTicket(_ context.Context, tk *chat.StreamTicket) error {
	return insert(t, t.r().tickets, tk.Hash, cloneTicket(tk), "ticket")
}

// TakeTicket: the store's write lock makes the take single.
func (t *tx) TakeTicket(_ context.Context, hash string) (*chat.StreamTicket, error) {
	tk, err := get(t, t.r().tickets, hash, cloneTicket, "ticket")
	del(t, t.r().tickets, hash)
	return tk, err
}

func (t *tx) DeleteTicketsBefore(_ context.Context, before time.Time, limit int) (int, error) {
	return deleteWhere(t, t.r().tickets, func(tk *chat.StreamTicket) bool { return tk.ExpiresAt.Before(before) }, limit), nil
}

// deleteWhere deletes up to limit (> 0) values of m that match and
// returns how many it deleted.
func deleteWhere[K comparable, V any](t *tx, m map[K]V, match func(V) bool, limit int) int {
	n := 0
	for k, v := range m {
		if limit > 0 && n >= limit {
			break
		}
		if match(v) {
			del(t, m, k)
			n++
		}
	}
	return n
}

func (t *tx) GetMeta(_ context.Context, key string) (string, error) {
	if v, ok := t.r().meta[key]; ok {
		return v, nil
	}
	return "", notFound("meta key", key)
}

func (t *tx) PutMetaIfAbsent(_ context.Context, key, value string) (string, error) {
	if v, ok := t.r().meta[key]; ok {
		return v, nil
	}
	put(t, t.r().meta, key, value)
	return value, nil
}

func (t *tx) PutBlob(_ context.Context, b *chat.Blob) error {
	put(t, t.r().blobs, pair{b.MessageID, b.Name}, cloneBlob(b))
	return nil
}

func (t *tx) GetBlob(_ context.Context, messageID, name string) (*chat.Blob, error) {
	return get(t, t.r().blobs, pair{messageID, name}, cloneBlob, "blob (message, name)")
}

func (t *tx) DeleteBlobs(_ context.Context, messageID string) error {
	deleteWhere(t, t.r().blobs, func(b *chat.Blob) bool { return b.MessageID == messageID }, 0)
	return nil
}

func (t *tx) DeleteChannelBlobs(_ context.Context, channelID string) error {
	deleteWhere(t, t.r().blobs, func(b *chat.Blob) bool { return b.ChannelID == channelID }, 0)
	return nil
}
