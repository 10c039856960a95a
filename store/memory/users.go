package memory

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

func (t *tx) CreateUser(_ context.Context, u *chat.User) error {
	v, err := copyUser(u)
	if err != nil {
		return err
	}
	v.Online, v.LastActiveAt = false, nil // written by SetPresence alone
	return insert(t, &t.r().users, v.UserID, v, "user")
}

func (t *tx) EnsureUsers(_ context.Context, ids []string, now time.Time) ([]*chat.User, error) {
	out := make([]*chat.User, 0, len(ids))
	for _, id := range ids {
		if _, ok := t.r().users[id]; !ok {
			put(t, &t.r().users, id, &chat.User{UserID: id, DisplayName: id, CreatedAt: chat.NewTime(now), UpdatedAt: chat.NewTime(now)})
		}
		out = append(out, cloneUser(t.r().users[id]))
	}
	return out, nil
}

func (t *tx) GetUser(_ context.Context, userID string) (*chat.User, error) {
	return get(t.r().users, userID, cloneUser, "user")
}

func (t *tx) GetUsers(_ context.Context, ids []string) ([]*chat.User, error) {
	return byIDs(t.r().users, ids, cloneUser), nil
}

func (t *tx) UpdateUser(_ context.Context, u *chat.User) error {
	in, err := copyUser(u)
	if err != nil {
		return err
	}
	return change(t, t.r().users, u.UserID, "user", func(v *chat.User) {
		v.DisplayName, v.Roles, v.Metadata, v.FlagCount = in.DisplayName, in.Roles, in.Metadata, in.FlagCount
		v.Hashflag, v.IsGlobalBan, v.TokensRevokedAt, v.UpdatedAt = in.Hashflag, in.IsGlobalBan, in.TokensRevokedAt, in.UpdatedAt
	})
}

func (t *tx) QueryUsers(_ context.Context, f chat.UserFilter) ([]*chat.User, error) {
	l := sortedValues(t.r().users, func(u *chat.User) bool {
		return (!f.Flagged || u.FlagCount > 0) && (f.Search == "" || chat.MatchUser(f.Search, u))
	}, func(a, b *chat.User) int { return strings.Compare(a.UserID, b.UserID) })
	at := func(u *chat.User, c *chat.UserCursor) int { return strings.Compare(u.UserID, c.UserID) }
	return copies(window(l, cursor(f.After, at), cursor(f.Before, at), 0, f.Limit), cloneUser), nil
}

func (t *tx) PutRole(_ context.Context, r *chat.Role) error {
	v := cloneRole(r)
	if old, ok := t.r().roles[v.RoleID]; ok {
		v.CreatedAt = old.CreatedAt
	}
	put(t, &t.r().roles, v.RoleID, v)
	return nil
}

func (t *tx) GetRoles(_ context.Context, ids []string) ([]*chat.Role, error) {
	return byIDs(t.r().roles, ids, cloneRole), nil
}

func (t *tx) ListRoles(_ context.Context, filter string) ([]*chat.Role, error) {
	lf := strings.ToLower(filter)
	keep := func(r *chat.Role) bool { return strings.Contains(strings.ToLower(r.RoleID), lf) }
	return copies(sortedValues(t.r().roles, keep, func(a, b *chat.Role) int { return cmp.Compare(a.RoleID, b.RoleID) }), cloneRole), nil
}

func (t *tx) bumpRules() { set(t, &t.r().rulesVersion, t.r().rulesVersion+1) }

func (t *tx) PutRule(_ context.Context, r *chat.Rule) error {
	v := cloneRule(r)
	k := pair{string(v.List), v.RuleID}
	if old, ok := t.r().rules[k]; ok {
		v.CreatedAt = old.CreatedAt
	}
	put(t, &t.r().rules, k, v)
	t.bumpRules()
	return nil
}

func (t *tx) ListRules(_ context.Context, list chat.RuleList, ids []string) ([]*chat.Rule, error) {
	keep := func(r *chat.Rule) bool { return r.List == list && (ids == nil || slices.Contains(ids, r.RuleID)) }
	return copies(sortedValues(t.r().rules, keep, func(a, b *chat.Rule) int { return cmp.Compare(a.RuleID, b.RuleID) }), cloneRule), nil
}

func (t *tx) DeleteRules(_ context.Context, list chat.RuleList, ids []string) (int, error) {
	n := deleteWhere(t, t.r().rules, func(r *chat.Rule) bool { return r.List == list && slices.Contains(ids, r.RuleID) }, 0)
	if n > 0 {
		t.bumpRules()
	}
	return n, nil
}

func (t *tx) RenameRule(_ context.Context, list chat.RuleList, oldID string, r *chat.Rule) error {
	old, ok := t.r().rules[pair{string(list), oldID}]
	if !ok {
		return chat.Errorf(chat.CodeNotFound, "%s rule %q not found", list, oldID)
	}
	if _, taken := t.r().rules[pair{string(list), r.RuleID}]; taken && r.RuleID != oldID {
		return conflict("%s rule %q already exists", list, r.RuleID)
	}
	v := clone(old, func(v *chat.Rule) {
		v.List, v.RuleID, v.IsMatchExactWord, v.UpdatedAt = list, r.RuleID, r.IsMatchExactWord, cmp.Or(nt(r.UpdatedAt), v.UpdatedAt)
	})
	del(t, t.r().rules, pair{string(list), oldID})
	put(t, &t.r().rules, pair{string(list), v.RuleID}, v)
	t.bumpRules()
	return nil
}

func (t *tx) RulesVersion(context.Context) (int64, error) { return t.r().rulesVersion, nil }

// Presence: one write transaction runs at a time, so the locks the
// interface speaks of hold by themselves, and SKIP LOCKED skips nothing.
func (t *tx) PutPresenceProcess(_ context.Context, p *chat.PresenceProcess) error {
	put(t, &t.r().procs, p.ProcessID, cloneProcess(p))
	return nil
}

func (t *tx) RenewPresenceProcess(_ context.Context, processID string, now, until time.Time) (bool, error) {
	if p, ok := t.r().procs[processID]; !ok || !p.ExpiresAt.After(now) {
		return false, nil
	}
	return true, change(t, t.r().procs, processID, "", func(p *chat.PresenceProcess) { p.RenewedAt, p.ExpiresAt = chat.NewTime(now), chat.NewTime(until) })
}

func (t *tx) ExpiredPresenceProcesses(_ context.Context, now time.Time, limit int) ([]*chat.PresenceProcess, error) {
	l := sortedValues(t.r().procs, func(p *chat.PresenceProcess) bool { return !p.ExpiresAt.After(now) },
		func(a, b *chat.PresenceProcess) int {
			return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt.Time), cmp.Compare(a.ProcessID, b.ProcessID))
		})
	return copies(first(l, limit), cloneProcess), nil
}

func (t *tx) DeletePresenceProcess(_ context.Context, processID string) ([]string, error) {
	del(t, t.r().procs, processID)
	var out []string
	for k := range t.r().streams {
		if k[0] == processID {
			out = append(out, k[1])
			del(t, t.r().streams, k)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (t *tx) AddPresenceStream(_ context.Context, processID, userID string) error {
	put(t, &t.r().streams, pair{processID, userID}, true)
	return nil
}

func (t *tx) RemovePresenceStream(_ context.Context, processID, userID string) error {
	del(t, t.r().streams, pair{processID, userID})
	return nil
}

func (t *tx) LivePresence(_ context.Context, userIDs []string, now time.Time) ([]string, error) {
	var out []string
	for k := range t.r().streams {
		if p, ok := t.r().procs[k[0]]; ok && p.ExpiresAt.After(now) && slices.Contains(userIDs, k[1]) && !slices.Contains(out, k[1]) {
			out = append(out, k[1])
		}
	}
	slices.Sort(out)
	return out, nil
}

func (t *tx) LockPresence(_ context.Context, userID string) (*chat.PresenceState, error) {
	if u, ok := t.r().users[userID]; ok {
		return t.presenceOf(u), nil
	}
	return nil, notFound("user", userID)
}

func (t *tx) presenceOf(u *chat.User) *chat.PresenceState {
	s := &chat.PresenceState{UserID: u.UserID, Online: u.Online, LastActiveAt: ntp(u.LastActiveAt)}
	if at, ok := t.r().offlineSince[u.UserID]; ok {
		s.OfflineSince = &at
	}
	return s
}

func (t *tx) SetPresence(_ context.Context, s *chat.PresenceState) error {
	err := change(t, t.r().users, s.UserID, "user", func(u *chat.User) { u.Online, u.LastActiveAt = s.Online, ntp(s.LastActiveAt) })
	if err != nil {
		return err
	} else if s.OfflineSince != nil {
		put(t, &t.r().offlineSince, s.UserID, nt(*s.OfflineSince))
	} else {
		del(t, t.r().offlineSince, s.UserID)
	}
	return nil
}

func (t *tx) LapsedPresence(_ context.Context, cutoff time.Time, limit int) ([]*chat.PresenceState, error) {
	var out []*chat.PresenceState
	for id, at := range t.r().offlineSince {
		if u, ok := t.r().users[id]; ok && u.Online && !at.After(cutoff) {
			out = append(out, t.presenceOf(u))
		}
	}
	slices.SortFunc(out, func(a, b *chat.PresenceState) int {
		return cmp.Or(a.OfflineSince.Compare(b.OfflineSince.Time), cmp.Compare(a.UserID, b.UserID))
	})
	return first(out, limit), nil
}

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
	return insert(t, &t.r().admins, a.Name, cloneAdmin(a), "admin")
}

func (t *tx) GetAdminByTokenHash(_ context.Context, hash []byte) (*chat.Admin, error) {
	if a := t.r().adminByHash(hash); a != nil {
		return cloneAdmin(a), nil
	}
	return nil, chat.Errorf(chat.CodeNotFound, "admin token not found")
}

func (t *tx) GetAdmin(_ context.Context, name string) (*chat.Admin, error) {
	return get(t.r().admins, name, cloneAdmin, "admin")
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
	return insert(t, &t.r().sessions, string(s.IDHash), cloneSession(s), "admin session")
}

func (t *tx) GetAdminSession(_ context.Context, idHash []byte) (*chat.AdminSession, error) {
	return get(t.r().sessions, string(idHash), cloneSession, "admin session")
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

func (t *tx) LastEventID(context.Context) (int64, error) { return t.r().lastEventID, nil }

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

func (t *tx) AppendAudit(_ context.Context, es []*chat.AuditEntry) error {
	for _, e := range es {
		if v, err := copyAudit(e); err != nil {
			return err
		} else if err := insert(t, &t.r().audit, v.AuditID, v, "audit entry"); err != nil {
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
	}, func(a, b *chat.AuditEntry) int { return newest(a.CreatedAt, b.CreatedAt, a.AuditID, b.AuditID) })
	at := func(e *chat.AuditEntry, c *chat.AuditCursor) int {
		return newest(e.CreatedAt, chat.NewTime(c.CreatedAt), e.AuditID, c.AuditID)
	}
	return copies(window(l, cursor(f.After, at), cursor(f.Before, at), 0, f.Limit), cloneAudit), nil
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
	return insert(t, &t.r().reports, r.ReportID, cloneReport(r), "report")
}

func (t *tx) GetReport(_ context.Context, reportID string) (*chat.Report, error) {
	return get(t.r().reports, reportID, cloneReport, "report")
}

func (t *tx) UpdateReport(_ context.Context, r *chat.Report) error {
	if p, ok := t.r().reports[r.ReportID]; ok {
		if err := t.r().openReport(clone(p, func(v *chat.Report) { v.State = r.State })); err != nil {
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
	}, func(a, b *chat.Report) int { return newest(a.CreatedAt, b.CreatedAt, a.ReportID, b.ReportID) })
	at := func(r *chat.Report, c *chat.ReportCursor) int {
		return newest(r.CreatedAt, chat.NewTime(c.CreatedAt), r.ReportID, c.ReportID)
	}
	return copies(window(l, cursor(f.After, at), cursor(f.Before, at), 0, f.Limit), cloneReport), nil
}

func (t *tx) PutTicket(_ context.Context, tk *chat.StreamTicket) error {
	return insert(t, &t.r().tickets, tk.Hash, cloneTicket(tk), "ticket")
}

// TakeTicket: the store's write lock makes the take single.
func (t *tx) TakeTicket(_ context.Context, hash string) (*chat.StreamTicket, error) {
	tk, err := get(t.r().tickets, hash, cloneTicket, "ticket")
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
	put(t, &t.r().meta, key, value)
	return value, nil
}

func (t *tx) PutBlob(_ context.Context, b *chat.Blob) error {
	put(t, &t.r().blobs, pair{b.MessageID, b.Name}, cloneBlob(b))
	return nil
}

func (t *tx) GetBlob(_ context.Context, messageID, name string) (*chat.Blob, error) {
	return get(t.r().blobs, pair{messageID, name}, cloneBlob, "blob (message, name)")
}

func (t *tx) DeleteBlobs(_ context.Context, messageID string) error {
	deleteWhere(t, t.r().blobs, func(b *chat.Blob) bool { return b.MessageID == messageID }, 0)
	return nil
}

func (t *tx) DeleteChannelBlobs(_ context.Context, channelID string) error {
	deleteWhere(t, t.r().blobs, func(b *chat.Blob) bool { return b.ChannelID == channelID }, 0)
	return nil
}
