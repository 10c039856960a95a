package chat

import (
	"context"
	"encoding/json"
	"time"
	"unicode"
	"unicode/utf8"
)

// Report target types: what a report is about.
const (
	ReportTargetMessage = "message"
	ReportTargetUser    = "user"
)

// Report states.
const (
	ReportOpen     = "open"
	ReportResolved = "resolved"
)

// Report resolution actions (Service.ResolveReport).
const (
	// ResolveDismiss closes the report and changes nothing else.
	ResolveDismiss = "dismiss"
	// ResolveDeleteMessage deletes the reported message (message
	// reports only), as Service.DeleteMessage.
	ResolveDeleteMessage = "deleteMessage"
	// ResolveBanUser bans the reported user (the author of a reported
	// message) from a channel, as Service.BanUsers: the message's
	// channel, or the channelId of the request (required for user
	// reports).
	ResolveBanUser = "banUser"
	// ResolveGlobalBan bans the reported user (the author of a reported
	// message) everywhere, as Service.GlobalBan (messages kept).
	ResolveGlobalBan = "globalBan"
)

// ReportActions lists the resolution actions, in the order of the
// reference.
var ReportActions = []string{ResolveDismiss, ResolveDeleteMessage, ResolveBanUser, ResolveGlobalBan}

// MaxReportReason and MaxReportNote bound a report's reason and note, in
// characters.
const (
	MaxReportReason = 256
	MaxReportNote   = 2000
)

// Report is a user's report of a message or of a user, waiting in the
// review queue of the admins until one resolves it. ChannelID is the
// reported message's channel (empty for user reports). Resolution is set
// once resolved.
type Report struct {
	ReportID   string            `json:"reportId"`
	ReporterID string            `json:"reporterId"`
	TargetType string            `json:"targetType"`
	TargetID   string            `json:"targetId"`
	ChannelID  string            `json:"channelId"`
	Reason     string            `json:"reason"`
	Note       string            `json:"note"`
	State      string            `json:"state"`
	Resolution *ReportResolution `json:"resolution"`
	CreatedAt  Time              `json:"createdAt"`
	ResolvedAt *Time             `json:"resolvedAt"`
}

// ReportResolution says how a report was resolved: the action, the admin's
// user who resolved it (ActorID) and the channel of a channel ban.
type ReportResolution struct {
	Action    string `json:"action"`
	ActorID   string `json:"actorId"`
	ChannelID string `json:"channelId"`
}

// reportJSON is the wire form of Report: empty ChannelID is null.
type reportJSON struct {
	ReportID   string          `json:"reportId"`
	ReporterID string          `json:"reporterId"`
	TargetType string          `json:"targetType"`
	TargetID   string          `json:"targetId"`
	ChannelID  *string         `json:"channelId"`
	Reason     string          `json:"reason"`
	Note       string          `json:"note"`
	State      string          `json:"state"`
	Resolution *resolutionJSON `json:"resolution"`
	CreatedAt  Time            `json:"createdAt"`
	ResolvedAt *Time           `json:"resolvedAt"`
}

type resolutionJSON struct {
	Action    string  `json:"action"`
	ActorID   string  `json:"actorId"`
	ChannelID *string `json:"channelId"`
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MarshalJSON implements json.Marshaler: empty channel ids are null.
func (r Report) MarshalJSON() ([]byte, error) {
	w := reportJSON{ReportID: r.ReportID, ReporterID: r.ReporterID, TargetType: r.TargetType, TargetID: r.TargetID,
		ChannelID: nullString(r.ChannelID), Reason: r.Reason, Note: r.Note, State: r.State, CreatedAt: r.CreatedAt,
		ResolvedAt: r.ResolvedAt}
	if r.Resolution != nil {
		w.Resolution = &resolutionJSON{Action: r.Resolution.Action, ActorID: r.Resolution.ActorID,
			ChannelID: nullString(r.Resolution.ChannelID)}
	}
	return json.Marshal(w)
}

// UnmarshalJSON implements json.Unmarshaler (null channel ids are empty).
func (r *Report) UnmarshalJSON(b []byte) error {
	var w reportJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Report{ReportID: w.ReportID, ReporterID: w.ReporterID, TargetType: w.TargetType, TargetID: w.TargetID,
		Reason: w.Reason, Note: w.Note, State: w.State, CreatedAt: w.CreatedAt, ResolvedAt: w.ResolvedAt}
	if w.ChannelID != nil {
		r.ChannelID = *w.ChannelID
	}
	if w.Resolution != nil {
		r.Resolution = &ReportResolution{Action: w.Resolution.Action, ActorID: w.Resolution.ActorID}
		if w.Resolution.ChannelID != nil {
			r.Resolution.ChannelID = *w.Resolution.ChannelID
		}
	}
	return nil
}

// ReportCursor is a keyset position in the newest-first report order
// (CreatedAt descending, then ReportID descending).
type ReportCursor struct {
	CreatedAt time.Time
	ReportID  string
}

// ReportFilter selects reports. Every non-empty field must match exactly.
// Results are newest first (CreatedAt descending, ReportID descending);
// After and Before work as in AuditFilter. Limit > 0 bounds the count.
type ReportFilter struct {
	State      string
	TargetType string
	ReporterID string
	After      *ReportCursor
	Before     *ReportCursor
	Limit      int
}

// ReportStore persists reports.
type ReportStore interface {
	// CreateReport inserts r. CodeConflict when its id exists, or when
	// its reporter has an open report of the same target (one open
	// report per reporter and target, kept by the store's own unique
	// index on SQL stores).
	CreateReport(ctx context.Context, r *Report) error
	// GetReport returns the report or CodeNotFound (LockReport holds it
	// for a read-modify-write, such as resolving it).
	GetReport(ctx context.Context, reportID string) (*Report, error)
	// UpdateReport replaces note, state, resolution and resolvedAt by
	// report id; CodeNotFound if absent.
	UpdateReport(ctx context.Context, r *Report) error
	// QueryReports returns the reports matching f.
	QueryReports(ctx context.Context, f ReportFilter) ([]*Report, error)
}

// ReportEventData is the data of report.didCreate and report.didResolve:
// the report and the users it references (reporter, reported user or the
// reported message's author, and the resolving admin). Report events go to
// webhooks and to admins' event streams, never to end users.
type ReportEventData struct {
	Reports []Report `json:"reports"`
	Users   []User   `json:"users"`
}

// CreateReportInput is the input of Service.CreateReport.
type CreateReportInput struct {
	TargetType string // ReportTargetMessage or ReportTargetUser
	TargetID   string
	Reason     string // 1-MaxReportReason characters
	Note       string // at most MaxReportNote characters
}

// ReportList is the response of the report operations: the reports, the
// users they reference (reporters, reported users, authors of reported
// messages, resolving admins) and, for message reports, the messages as
// the caller may see them.
type ReportList struct {
	Reports  []Report  `json:"reports"`
	Messages []Message `json:"messages"`
	Users    []User    `json:"users"`
	Paging   *Paging   `json:"paging,omitempty"`
}

// checkReportText validates a reason or a note: valid UTF-8, at most max
// characters, no control characters (a note may hold line breaks and
// tabs).
func checkReportText(field, v string, max int, required, multiline bool) error {
	if v == "" {
		if required {
			return invalid(field, "is required")
		}
		return nil
	}
	if err := checkText(field, v); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(v); n > max {
		return invalid(field, "must be at most %d characters", max)
	}
	for _, r := range v {
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t' || r == '\r')) {
			return invalid(field, "must not contain control characters")
		}
	}
	return nil
}

// CreateReport files a report by actorID of a message or a user. Any user
// may report; a message only where it may read it (its channels, or
// Channel/GlobalAccess; admins everywhere). One open report per reporter
// and target: a second is CodeConflict until the first is resolved.
// Emits report.didCreate (webhooks and admins only). Errors:
// CodeBadRequest, CodeNotFound (no such message or user),
// CodePermissionDenied, CodeConflict.
func (s *Service) CreateReport(ctx context.Context, actorID string, in CreateReportInput) (*ReportList, error) {
	switch in.TargetType {
	case ReportTargetMessage, ReportTargetUser:
	case "":
		return nil, invalid("targetType", "is required")
	default:
		return nil, invalid("targetType", "must be message or user, not %s", quote(in.TargetType))
	}
	if err := s.checkID("targetId", in.TargetID); err != nil {
		return nil, err
	}
	if err := checkReportText("reason", in.Reason, MaxReportReason, true, false); err != nil {
		return nil, err
	}
	if err := checkReportText("note", in.Note, MaxReportNote, false, true); err != nil {
		return nil, err
	}
	now := s.Now()
	var out *ReportList
	err := s.update(ctx, func(tx Tx, ev *events) error {
		r := &Report{ReportID: s.newID(), ReporterID: actorID, TargetType: in.TargetType, TargetID: in.TargetID,
			Reason: in.Reason, Note: in.Note, State: ReportOpen, CreatedAt: now}
		switch in.TargetType {
		case ReportTargetMessage:
			m, err := tx.GetMessage(ctx, in.TargetID)
			if err != nil {
				return notFound(err, "message", in.TargetID)
			}
			if _, err := s.authorize(ctx, tx, actorID, actReportMessage, m.ChannelID); err != nil {
				return err
			}
			if m.IsDeleted {
				return Errorf(CodeNotFound, "message %s is deleted", quote(in.TargetID))
			}
			r.ChannelID = m.ChannelID
		case ReportTargetUser:
			if _, err := s.authorize(ctx, tx, actorID, actReportUser, ""); err != nil {
				return err
			}
			if _, err := tx.GetUser(ctx, in.TargetID); err != nil {
				return notFound(err, "user", in.TargetID)
			}
		}
		if _, err := tx.EnsureUsers(ctx, []string{actorID}, now.Time); err != nil {
			return err
		}
		if err := tx.CreateReport(ctx, r); err != nil {
			if ErrorCode(err) == CodeConflict {
				return Errorf(CodeConflict, "user %s already has an open report of %s %s", quote(actorID), in.TargetType, quote(in.TargetID))
			}
			return err
		}
		var err error
		if out, err = s.reportList(ctx, tx, []*Report{r}); err != nil {
			return err
		}
		ev.add(EventReportDidCreate, ReportEventData{Reports: out.Reports, Users: out.Users})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// reportList builds the response of reports: the users and messages they
// reference.
func (s *Service) reportList(ctx context.Context, tx Tx, rs []*Report) (*ReportList, error) {
	out := &ReportList{Reports: make([]Report, 0, len(rs)), Messages: []Message{}, Users: []User{}}
	var userIDs, msgIDs []string
	for _, r := range rs {
		out.Reports = append(out.Reports, *r)
		userIDs = append(userIDs, r.ReporterID)
		if r.TargetType == ReportTargetUser {
			userIDs = append(userIDs, r.TargetID)
		} else {
			msgIDs = append(msgIDs, r.TargetID)
		}
		if r.Resolution != nil && r.Resolution.ActorID != "" {
			userIDs = append(userIDs, r.Resolution.ActorID)
		}
	}
	if len(msgIDs) > 0 {
		ms, err := tx.GetMessages(ctx, dedupe(msgIDs))
		if err != nil {
			return nil, err
		}
		byID := make(map[string]*Message, len(ms))
		for _, m := range ms {
			byID[m.MessageID] = m
		}
		s.present(ms...)
		for _, id := range dedupe(msgIDs) {
			if m := byID[id]; m != nil {
				out.Messages = append(out.Messages, *m)
				userIDs = append(userIDs, m.UserID)
			}
		}
	}
	us, err := tx.GetUsers(ctx, dedupe(userIDs))
	if err != nil {
		return nil, err
	}
	out.Users = userValues(us)
	return out, nil
}

// ReportQuery selects reports for Service.QueryReports: State is "",
// ReportOpen or ReportResolved; TargetType "", ReportTargetMessage or
// ReportTargetUser; ReporterID "" or a user. Token continues a query.
type ReportQuery struct {
	State      string
	TargetType string
	ReporterID string
	Limit      int
	Token      string
}

// QueryReports lists reports newest first with keyset paging (default page
// 10, at most Limits.MaxPage), with the users and messages they reference.
// Admins only. Errors: CodeBadRequest (bad filter, limit or token),
// CodePermissionDenied.
func (s *Service) QueryReports(ctx context.Context, actorID string, q ReportQuery) (*ReportList, error) {
	switch q.State {
	case "", ReportOpen, ReportResolved:
	default:
		return nil, invalid("state", "must be open or resolved, not %s", quote(q.State))
	}
	switch q.TargetType {
	case "", ReportTargetMessage, ReportTargetUser:
	default:
		return nil, invalid("targetType", "must be message or user, not %s", quote(q.TargetType))
	}
	if q.ReporterID != "" {
		if err := s.checkID("reporterId", q.ReporterID); err != nil {
			return nil, err
		}
	}
	limit, err := s.pageSize("options.limit", q.Limit, s.lim.DefaultPage)
	if err != nil {
		return nil, err
	}
	qh := queryHash(q.State, q.TargetType, q.ReporterID)
	f := ReportFilter{State: q.State, TargetType: q.TargetType, ReporterID: q.ReporterID}
	tok, limit, err := s.openPage("options.token", q.Token, "reports", qh, q.Limit, limit)
	if err != nil {
		return nil, err
	}
	if tok != nil {
		f.After, f.Before = place(tok, &ReportCursor{CreatedAt: tok.at(), ReportID: tok.ID})
	}
	f.Limit = limit + 1
	var out *ReportList
	err = s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, actReviewReports, ""); err != nil {
			return err
		}
		rs, err := tx.QueryReports(ctx, f)
		if err != nil {
			return err
		}
		more := len(rs) > limit
		if more {
			rs = rs[:limit]
		}
		if f.Before != nil {
			reverse(rs)
		}
		if out, err = s.reportList(ctx, tx, rs); err != nil {
			return err
		}
		out.Paging = &Paging{}
		if len(rs) == 0 {
			return nil
		}
		first, last := rs[0], rs[len(rs)-1]
		s.setLinks(out.Paging, tok, more,
			pageToken{K: "reports", Q: qh, T: first.CreatedAt.UnixMilli(), ID: first.ReportID, L: limit},
			pageToken{K: "reports", Q: qh, T: last.CreatedAt.UnixMilli(), ID: last.ReportID, L: limit})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetReport returns one report with the users and message it references.
// Admins only. Errors: CodeBadRequest, CodePermissionDenied, CodeNotFound.
func (s *Service) GetReport(ctx context.Context, actorID, reportID string) (*ReportList, error) {
	if err := s.checkID("reportId", reportID); err != nil {
		return nil, err
	}
	var out *ReportList
	err := s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, actReviewReports, ""); err != nil {
			return err
		}
		r, err := tx.GetReport(ctx, reportID)
		if err != nil {
			return notFound(err, "report", reportID)
		}
		out, err = s.reportList(ctx, tx, []*Report{r})
		return err
	})
	return out, err
}

// ResolveReportInput is the input of Service.ResolveReport.
type ResolveReportInput struct {
	ReportID string
	Action   string // one of ReportActions
	// ChannelID is the channel of a ResolveBanUser: required for user
	// reports; for message reports it defaults to the message's channel.
	ChannelID string
}

// ResolveReport resolves an open report (admins only). The action runs
// first, through the Service operation that does it by hand (DeleteMessage,
// BanUsers, GlobalBan), with that operation's own audit entry and events;
// then, in one transaction, the report becomes resolved with its
// resolution, a report.resolve audit entry is written and report.didResolve
// emitted. Every action is idempotent, so a resolution interrupted between
// the two steps (the report still open) can simply be run again. A report
// already resolved is CodeConflict, its action not run again. The
// reported user is the user of a user report, or the author of the
// reported message. Errors: CodeBadRequest (unknown action, deleteMessage
// on a user report, banUser of a user report without channelId),
// CodePermissionDenied, CodeNotFound, CodeConflict, and those of the
// action (CodeForbidden when the channel is closed, CodePermissionDenied
// to ban an admin).
func (s *Service) ResolveReport(ctx context.Context, actorID string, in ResolveReportInput) (*ReportList, error) {
	if err := s.checkID("reportId", in.ReportID); err != nil {
		return nil, err
	}
	switch in.Action {
	case ResolveDismiss, ResolveDeleteMessage, ResolveBanUser, ResolveGlobalBan:
	case "":
		return nil, invalid("action", "is required")
	default:
		return nil, invalid("action", "must be dismiss, deleteMessage, banUser or globalBan, not %s", quote(in.Action))
	}
	if in.ChannelID != "" {
		if err := s.checkID("channelId", in.ChannelID); err != nil {
			return nil, err
		}
	}
	// Decide what the action does to whom, from the report as it is.
	var target, channelID string
	err := s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, actReviewReports, ""); err != nil {
			return err
		}
		r, err := tx.GetReport(ctx, in.ReportID)
		if err != nil {
			return notFound(err, "report", in.ReportID)
		}
		if r.State != ReportOpen {
			return Errorf(CodeConflict, "report %s is already resolved", quote(in.ReportID))
		}
		target, channelID = r.TargetID, in.ChannelID
		if r.TargetType == ReportTargetMessage {
			m, err := tx.GetMessage(ctx, r.TargetID)
			if err != nil {
				return notFound(err, "message", r.TargetID)
			}
			if in.Action != ResolveDeleteMessage {
				target = m.UserID
			}
			if channelID == "" {
				channelID = m.ChannelID
			}
		}
		switch {
		case in.Action == ResolveDeleteMessage && r.TargetType != ReportTargetMessage:
			return invalid("action", "deleteMessage resolves message reports only")
		case in.Action == ResolveBanUser && channelID == "":
			return invalid("channelId", "is required to ban the reported user from a channel")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch in.Action {
	case ResolveDeleteMessage:
		err = s.DeleteMessage(ctx, actorID, target)
	case ResolveBanUser:
		err = s.BanUsers(ctx, actorID, channelID, []string{target})
	case ResolveGlobalBan:
		err = s.GlobalBan(ctx, actorID, target, false)
	}
	if err != nil {
		return nil, err
	}
	now := s.Now()
	var out *ReportList
	err = s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, actReviewReports, ""); err != nil {
			return err
		}
		r, err := tx.LockReport(ctx, in.ReportID)
		if err != nil {
			return notFound(err, "report", in.ReportID)
		}
		if r.State != ReportOpen {
			return Errorf(CodeConflict, "report %s is already resolved", quote(in.ReportID))
		}
		res := &ReportResolution{Action: in.Action, ActorID: actorID}
		if in.Action == ResolveBanUser {
			res.ChannelID = channelID
		}
		r.State, r.Resolution, r.ResolvedAt = ReportResolved, res, &now
		if err := tx.UpdateReport(ctx, r); err != nil {
			return err
		}
		details := map[string]any{"resolution": in.Action, "targetType": r.TargetType, "targetId": r.TargetID,
			"reporterId": r.ReporterID}
		if in.Action != ResolveDismiss {
			details["subjectId"] = target
		}
		auditChannel := res.ChannelID
		if auditChannel == "" {
			auditChannel = r.ChannelID
		}
		if err := s.audit(ctx, tx, actorID, AuditReportResolve, AuditTargetReport, r.ReportID, auditChannel, details); err != nil {
			return err
		}
		if out, err = s.reportList(ctx, tx, []*Report{r}); err != nil {
			return err
		}
		ev.add(EventReportDidResolve, ReportEventData{Reports: out.Reports, Users: out.Users})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
