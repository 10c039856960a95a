package chat

import (
	"context"
	"encoding/json"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// UserReactionCursor is a keyset position in the (ReferenceID,
// ReactionName) ascending order of one user's reactions.
type UserReactionCursor struct {
	MessageID    string
	ReactionName string
}

// UserDataStore reads everything one user wrote, page by page, for the
// export and the erasure of a user's data.
type UserDataStore interface {
	// UserMessages returns up to limit messages of the author, deleted
	// ones too, in (CreatedAt, MessageID) ascending order, those after
	// the cursor when it is not nil. Adapters read the index on (userId,
	// createdAt, messageId) that a purge reads, so a page costs what it
	// returns.
	UserMessages(ctx context.Context, userID string, after *PurgeCursor, limit int) ([]*Message, error)
	// UserReactions returns up to limit reactions of the user in
	// (ReferenceID, ReactionName) ascending order, those after the cursor
	// when it is not nil.
	UserReactions(ctx context.Context, userID string, after *UserReactionCursor, limit int) ([]*Reaction, error)
}

// ErasedDisplayName is the displayName of an erased user.
const ErasedDisplayName = "Deleted user"

// ExportFile is a file reference of a user's export: a file or image the
// user posted, with signed links that open it without an access token
// (URL for a file, URLs by size for an image), valid for Config.LinkTTL.
type ExportFile struct {
	MessageID string            `json:"messageId"`
	ChannelID string            `json:"channelId"`
	Type      MessageType       `json:"type"`
	FileName  string            `json:"fileName"`
	MimeType  string            `json:"mimeType"`
	URL       string            `json:"url,omitempty"`
	URLs      map[string]string `json:"urls,omitempty"`
	CreatedAt Time              `json:"createdAt"`
}

// ExportMembership is one of a user's channels in an export: the channel
// and the user's relation to it.
type ExportMembership struct {
	Channel     Channel     `json:"channel"`
	ChannelUser ChannelUser `json:"channelUser"`
}

// exportPage is the number of items an export reads per transaction:
// Config.PurgeBatch (DefaultPurgeBatch).
func (s *Service) exportPage() int {
	if s.cfg.PurgeBatch > 0 {
		return s.cfg.PurgeBatch
	}
	return DefaultPurgeBatch
}

// ExportUser writes the data of a user to w as one JSON document (admins
// only):
//
//	{"userId", "exportedAt", "user", "memberships":[{channel, channelUser}],
//	 "messages":[...], "reactions":[...], "reports":[...], "files":[...],
//	 "devices":[...], "notificationSettings":[...]}
//
// messages are every message the user posted (deleted ones too, their
// data empty), oldest first; reactions the user's reactions; reports the
// reports the user filed; files the files and images among the messages,
// with signed links (see ExportFile); devices the user's push devices
// (without their tokens); notificationSettings the levels the user set
// (its own, channelId null, and per channel). The document is streamed: each page
// of Config.PurgeBatch items is read in a transaction of its own and
// encoded before the next is read, so memory does not grow with the
// user's data; what the user changes while the export runs may or may not
// be in it. The user's existence and the caller's right are checked before
// anything is written: those errors (CodeBadRequest, CodePermissionDenied,
// CodeNotFound) leave w untouched. An error after the first byte (the
// store failing, w failing) is returned with the document incomplete.
func (s *Service) ExportUser(ctx context.Context, actorID, userID string, w io.Writer) error {
	if err := s.checkID("userId", userID); err != nil {
		return err
	}
	var user *User
	err := s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, actExportUser, ""); err != nil {
			return err
		}
		u, err := tx.GetUser(ctx, userID)
		if err != nil {
			return notFound(err, "user", userID)
		}
		user = u
		return nil
	})
	if err != nil {
		return err
	}
	// jsontext's encoder writes the document's structure (and a newline
	// after it) and flushes to w as its buffer fills; each value is
	// encoding/json's.
	x := &exporter{s: s, enc: jsontext.NewEncoder(w), page: s.exportPage()}
	presentUser(user)
	x.token(jsontext.BeginObject)
	x.member("userId", userID)
	x.member("exportedAt", s.Now())
	x.member("user", user)
	steps := []struct {
		key string
		fn  func(ctx context.Context, userID string) error
	}{
		{"memberships", x.memberships},
		{"messages", x.messages},
		{"reactions", x.reactions},
		{"reports", x.reports},
		{"files", x.files},
		{"devices", x.devices},
		{"notificationSettings", x.notificationSettings},
	}
	for _, st := range steps {
		x.token(jsontext.String(st.key))
		x.token(jsontext.BeginArray)
		if err := st.fn(ctx, userID); err != nil {
			return err
		}
		x.token(jsontext.EndArray)
	}
	x.token(jsontext.EndObject)
	return x.err
}

// exporter writes an export document; the first error sticks.
type exporter struct {
	s    *Service
	enc  *jsontext.Encoder
	page int
	err  error
}

func (x *exporter) token(t jsontext.Token) {
	if x.err == nil {
		x.err = x.enc.WriteToken(t)
	}
}

// item writes v, an object member's value or an array element.
func (x *exporter) item(v any) {
	if x.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		x.err = err
		return
	}
	x.err = x.enc.WriteValue(b)
}

func (x *exporter) member(key string, v any) {
	x.token(jsontext.String(key))
	x.item(v)
}

// pages reads a page with read in a read-only transaction, then writes it
// with write outside the transaction, until read returns fewer than
// x.page items, or an error (of read or of the writer) stops it.
func (x *exporter) pages(ctx context.Context, read func(tx Tx) (int, error), write func()) error {
	for {
		var n int
		err := x.s.view(ctx, func(tx Tx) (err error) {
			n, err = read(tx)
			return err
		})
		if err != nil {
			return err
		}
		write()
		if x.err != nil {
			return x.err
		}
		if n < x.page {
			return nil
		}
	}
}

func (x *exporter) memberships(ctx context.Context, userID string) error {
	var after *ChannelCursor
	var chs []*Channel
	var cus []*ChannelUser
	return x.pages(ctx, func(tx Tx) (int, error) {
		var err error
		chs, err = tx.QueryChannels(ctx, ChannelFilter{MemberOf: userID, IncludeClosed: true, After: after, Limit: x.page})
		if err != nil || len(chs) == 0 {
			return 0, err
		}
		ids := make([]string, len(chs))
		for i, c := range chs {
			ids[i] = c.ChannelID
		}
		cus, err = tx.ListMemberships(ctx, userID, ids)
		return len(chs), err
	}, func() {
		rel := make(map[string]*ChannelUser, len(cus))
		for _, cu := range cus {
			rel[cu.ChannelID] = cu
		}
		now := x.s.now()
		for _, c := range chs {
			cu := rel[c.ChannelID]
			if cu == nil {
				continue
			}
			presentChannel(c, now)
			presentChannelUser(cu, now)
			x.item(ExportMembership{Channel: *c, ChannelUser: *cu})
		}
		if len(chs) > 0 {
			last := chs[len(chs)-1]
			after = &ChannelCursor{CreatedAt: last.CreatedAt.Time, ChannelID: last.ChannelID}
		}
	})
}

// eachMessage calls fn with every message of the user, page by page.
func (x *exporter) eachMessage(ctx context.Context, userID string, fn func(m *Message)) error {
	var after *PurgeCursor
	var ms []*Message
	return x.pages(ctx, func(tx Tx) (n int, err error) {
		ms, err = tx.UserMessages(ctx, userID, after, x.page)
		return len(ms), err
	}, func() {
		x.s.present(ms...)
		for _, m := range ms {
			fn(m)
		}
		if len(ms) > 0 {
			last := ms[len(ms)-1]
			after = &PurgeCursor{CreatedAt: last.CreatedAt.Time, MessageID: last.MessageID}
		}
	})
}

func (x *exporter) messages(ctx context.Context, userID string) error {
	return x.eachMessage(ctx, userID, func(m *Message) { x.item(m) })
}

func (x *exporter) files(ctx context.Context, userID string) error {
	return x.eachMessage(ctx, userID, func(m *Message) {
		if m.IsDeleted || m.Type != MessageTypeImage && m.Type != MessageTypeFile {
			return
		}
		f := ExportFile{MessageID: m.MessageID, ChannelID: m.ChannelID, Type: m.Type, CreatedAt: m.CreatedAt}
		f.FileName, _ = m.Data["fileName"].(string)
		f.MimeType, _ = m.Data["mimeType"].(string)
		if u, ok := m.Data["url"].(string); ok {
			f.URL = u
		}
		if us, ok := m.Data["urls"].(map[string]any); ok {
			f.URLs = map[string]string{}
			for k, v := range us {
				if s, ok := v.(string); ok {
					f.URLs[k] = s
				}
			}
		}
		x.item(f)
	})
}

func (x *exporter) reactions(ctx context.Context, userID string) error {
	var after *UserReactionCursor
	var rs []*Reaction
	return x.pages(ctx, func(tx Tx) (n int, err error) {
		rs, err = tx.UserReactions(ctx, userID, after, x.page)
		return len(rs), err
	}, func() {
		for _, r := range rs {
			x.item(r)
		}
		if len(rs) > 0 {
			last := rs[len(rs)-1]
			after = &UserReactionCursor{MessageID: last.ReferenceID, ReactionName: last.ReactionName}
		}
	})
}

func (x *exporter) devices(ctx context.Context, userID string) error {
	var ds []*Device
	err := x.s.view(ctx, func(tx Tx) error {
		var err error
		ds, err = tx.ListDevices(ctx, userID)
		return err
	})
	if err != nil {
		return err
	}
	for _, d := range ds {
		x.item(d)
	}
	return x.err
}

func (x *exporter) notificationSettings(ctx context.Context, userID string) error {
	after, isAfter := "", false
	var ns []*NotificationSetting
	return x.pages(ctx, func(tx Tx) (n int, err error) {
		ns, err = tx.ListNotificationLevels(ctx, userID, after, isAfter, x.page)
		return len(ns), err
	}, func() {
		for _, n := range ns {
			n.EffectiveLevel = n.Level
			x.item(n)
		}
		if len(ns) > 0 {
			after, isAfter = ns[len(ns)-1].ChannelID, true
		}
	})
}

func (x *exporter) reports(ctx context.Context, userID string) error {
	var after *ReportCursor
	var rs []*Report
	return x.pages(ctx, func(tx Tx) (n int, err error) {
		rs, err = tx.QueryReports(ctx, ReportFilter{ReporterID: userID, After: after, Limit: x.page})
		return len(rs), err
	}, func() {
		for _, r := range rs {
			x.item(r)
		}
		if len(rs) > 0 {
			last := rs[len(rs)-1]
			after = &ReportCursor{CreatedAt: last.CreatedAt.Time, ReportID: last.ReportID}
		}
	})
}

// EraseResult is the response of an erasure.
type EraseResult struct {
	Success          bool `json:"success"`
	DeletedMessages  int  `json:"deletedMessages"`
	RemovedReactions int  `json:"removedReactions"`
	RemovedDevices   int  `json:"removedDevices"`
}

// EraseUser erases the data of a user (admins only) and keeps its id,
// anonymized, so that channels, reports and the audit log stay
// consistent:
//
//   - the profile: displayName becomes ErasedDisplayName, metadata {},
//     roles [], flags cleared; the user's tokens are revoked (user.didUpdate);
//   - every message of the user is soft-deleted as DeleteMessage does
//     (data {}, files and images purged, segment kept), and its tags
//     emptied (message.didDelete for each message that was live);
//   - every reaction of the user is removed, the message counters kept in
//     step (reaction.didRemove for each);
//   - the notes of the reports the user filed are emptied;
//   - the user's push devices and notification levels are deleted (with
//     the profile, so no push reaches the user's devices afterwards).
//
// Memberships, read markers and the global ban flag stay: the erased user
// remains a member, shown under ErasedDisplayName. Channel counters stay
// right as with any deletion: messageCount and childrenNumber count
// segments and comments, deleted ones included; reaction counts and the
// unread counts of others drop with the deleted messages and reactions.
//
// The work runs in batches of Config.PurgeBatch, each its own
// transaction, as PurgeUserMessages does; the erasure is recorded as one
// user.erase audit entry, written with the first transaction and kept up
// to date by the others (details deletedMessages, removedReactions,
// complete). Erasing again is a success that finds nothing left to change
// (it records its own entry, with zero counts). An admin's user cannot be
// erased (CodePermissionDenied). Errors: CodeBadRequest,
// CodePermissionDenied, CodeNotFound (no such user).
func (s *Service) EraseUser(ctx context.Context, actorID, userID string) (*EraseResult, error) {
	if err := s.checkID("userId", userID); err != nil {
		return nil, err
	}
	defer s.authUsers.forget(userID) // also on failure: the store may have committed
	batch := s.exportPage()
	start := s.Now()
	auditID := s.newID()
	res := &EraseResult{Success: true}
	details := func(complete bool) map[string]any {
		return map[string]any{"deletedMessages": res.DeletedMessages, "removedReactions": res.RemovedReactions,
			"removedDevices": res.RemovedDevices, "complete": complete}
	}
	var author *User
	// The profile first: tokens revoked, nothing new comes from the
	// user's sessions while the rest runs.
	err := s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, actEraseUser, ""); err != nil {
			return err
		}
		u, err := tx.LockUser(ctx, userID)
		if err != nil {
			return notFound(err, "user", userID)
		}
		if hasRole(u.Roles, RoleGlobalAdmin) {
			return Errorf(CodePermissionDenied, "user %s is an admin and cannot be erased", quote(userID))
		}
		e := &AuditEntry{AuditID: auditID, ActorID: actorID, Action: AuditUserErase, TargetType: AuditTargetUser,
			TargetID: userID, Details: details(false), CreatedAt: start}
		if err := tx.AppendAudit(ctx, []*AuditEntry{e}); err != nil {
			return err
		}
		author = u
		n, err := tx.DeleteDevices(ctx, userID)
		if err != nil {
			return err
		}
		res.RemovedDevices = n
		if err := tx.DeleteNotificationLevels(ctx, userID); err != nil {
			return err
		}
		if n > 0 {
			if err := tx.SetAuditDetails(ctx, auditID, details(false)); err != nil {
				return err
			}
		}
		if erased(u) {
			return nil
		}
		if u.FlagCount > 0 {
			if err := tx.ClearFlags(ctx, FlagTargetUser, userID); err != nil {
				return err
			}
		}
		u.DisplayName, u.Metadata, u.Roles = ErasedDisplayName, map[string]any{}, []string{}
		u.FlagCount, u.Hashflag = 0, Hashflag{Hash: []uint32{}}
		u.UpdatedAt, u.TokensRevokedAt = start, &start
		if err := tx.UpdateUser(ctx, u); err != nil {
			return err
		}
		presentUser(u)
		ev.add(EventUserDidUpdate, UserEventData{Users: []User{*u}})
		return nil
	})
	if err != nil {
		return nil, err
	}
	presentUser(author)
	users := []User{*author}
	// The rest in batches: each step again until it finds fewer than
	// batch rows.
	var after *PurgeCursor
	var rafter *ReportCursor
	steps := []func(tx Tx, ev *events) (int, error){
		// Live messages: soft-deleted as a purge does.
		func(tx Tx, ev *events) (int, error) {
			ms, err := tx.SoftDeleteBatch(ctx, PurgeFilter{UserID: userID, Limit: batch}, s.now())
			if err != nil {
				return 0, err
			}
			for _, m := range ms {
				if err := tx.DeleteBlobs(ctx, m.MessageID); err != nil {
					return 0, err
				}
			}
			s.present(ms...)
			for _, m := range ms {
				ev.add(EventMessageDidDelete, MessageEventData{Messages: []Message{*m}, Users: users})
			}
			res.DeletedMessages += len(ms)
			if len(ms) == 0 {
				return 0, nil
			}
			return len(ms), tx.SetAuditDetails(ctx, auditID, details(false))
		},
		// Every message, deleted before or now: no tags, no file left.
		func(tx Tx, _ *events) (int, error) {
			ms, err := tx.UserMessages(ctx, userID, after, batch)
			if err != nil {
				return 0, err
			}
			for _, m := range ms {
				if m.Type == MessageTypeImage || m.Type == MessageTypeFile {
					if err := tx.DeleteBlobs(ctx, m.MessageID); err != nil {
						return 0, err
					}
				}
				// A message posted after the deletion pass is left to a
				// next erasure (the user's tokens are revoked by now).
				if m.IsDeleted && (len(m.Tags) > 0 || len(m.Data) > 0) {
					m.Tags, m.Data, m.UpdatedAt = []string{}, map[string]any{}, NewTime(s.now())
					if err := tx.UpdateMessage(ctx, m); err != nil {
						return 0, err
					}
				}
			}
			if len(ms) > 0 {
				last := ms[len(ms)-1]
				after = &PurgeCursor{CreatedAt: last.CreatedAt.Time, MessageID: last.MessageID}
			}
			return len(ms), nil
		},
		// Reactions: each removal keeps the message's counters in step.
		func(tx Tx, ev *events) (int, error) {
			rs, err := tx.UserReactions(ctx, userID, nil, batch)
			if err != nil {
				return 0, err
			}
			for _, r := range rs {
				m, err := tx.LockMessage(ctx, r.ReferenceID)
				if err != nil {
					return 0, err
				}
				if _, err := RemoveMessageReaction(ctx, tx, m, userID, r.ReactionName); err != nil {
					return 0, err
				}
				out, err := s.messageList(ctx, tx, []*Message{m})
				if err != nil {
					return 0, err
				}
				us := out.Users
				if m.UserID != userID {
					us = append(us, users...)
				}
				ev.add(EventReactionDidRemove, ReactionEventData{Reactions: []Reaction{*r}, Messages: out.Messages, Users: us})
			}
			res.RemovedReactions += len(rs)
			if len(rs) == 0 {
				return 0, nil
			}
			return len(rs), tx.SetAuditDetails(ctx, auditID, details(false))
		},
		// Notes of the reports the user filed.
		func(tx Tx, _ *events) (int, error) {
			rs, err := tx.QueryReports(ctx, ReportFilter{ReporterID: userID, After: rafter, Limit: batch})
			if err != nil {
				return 0, err
			}
			for _, r := range rs {
				if r.Note != "" {
					r.Note = ""
					if err := tx.UpdateReport(ctx, r); err != nil {
						return 0, err
					}
				}
			}
			if len(rs) > 0 {
				last := rs[len(rs)-1]
				rafter = &ReportCursor{CreatedAt: last.CreatedAt.Time, ReportID: last.ReportID}
			}
			return len(rs), nil
		},
	}
	for _, step := range steps {
		for {
			var n int
			err := s.update(ctx, func(tx Tx, ev *events) (err error) {
				n, err = step(tx, ev)
				return err
			})
			if err != nil {
				return nil, err
			}
			if n < batch {
				break
			}
		}
	}
	err = s.update(ctx, func(tx Tx, _ *events) error {
		return tx.SetAuditDetails(ctx, auditID, details(true))
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// erased reports whether u's profile is already erased.
func erased(u *User) bool {
	return u.DisplayName == ErasedDisplayName && len(u.Metadata) == 0 && len(u.Roles) == 0 && u.FlagCount == 0 &&
		u.TokensRevokedAt != nil
}
