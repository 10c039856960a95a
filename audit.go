package chat

import (
	"context"
	"encoding/json"
)

// AuditEntry is one record of the audit log (docs/api.md section 12): who
// (ActorID, the acting user; empty for the server's operator at the
// command line) did what (Action, one of the Audit* names) to which target
// (TargetType and TargetID), in which channel when the action concerns one
// (ChannelID), with the action's parameters (Details). On the wire an
// empty ActorID or ChannelID is null.
type AuditEntry struct {
	AuditID    string         `json:"auditId"`
	ActorID    string         `json:"actorId"`
	Action     string         `json:"action"`
	TargetType string         `json:"targetType"`
	TargetID   string         `json:"targetId"`
	ChannelID  string         `json:"channelId"`
	Details    map[string]any `json:"details"`
	CreatedAt  Time           `json:"createdAt"`
}

// auditJSON is the wire form of AuditEntry.
type auditJSON struct {
	AuditID    string         `json:"auditId"`
	ActorID    *string        `json:"actorId"`
	Action     string         `json:"action"`
	TargetType string         `json:"targetType"`
	TargetID   string         `json:"targetId"`
	ChannelID  *string        `json:"channelId"`
	Details    map[string]any `json:"details"`
	CreatedAt  Time           `json:"createdAt"`
}

// MarshalJSON implements json.Marshaler: empty ActorID and ChannelID are
// null, nil Details is {}.
func (e AuditEntry) MarshalJSON() ([]byte, error) {
	w := auditJSON{AuditID: e.AuditID, Action: e.Action, TargetType: e.TargetType, TargetID: e.TargetID,
		Details: e.Details, CreatedAt: e.CreatedAt}
	if e.ActorID != "" {
		w.ActorID = &e.ActorID
	}
	if e.ChannelID != "" {
		w.ChannelID = &e.ChannelID
	}
	if w.Details == nil {
		w.Details = map[string]any{}
	}
	return json.Marshal(w)
}

// The audit actions, "<resource>.<verb>". Each is recorded in the
// transaction of the change it describes.
const (
	AuditChannelMute        = "channel.mute"        // target channel; details mutePeriod
	AuditChannelUnmute      = "channel.unmute"      // target channel
	AuditChannelMuteUsers   = "channel.muteUsers"   // one per user; details mutePeriod
	AuditChannelUnmuteUsers = "channel.unmuteUsers" // one per user
	AuditChannelBanUsers    = "channel.banUsers"    // one per user
	AuditChannelUnbanUsers  = "channel.unbanUsers"  // one per user
	AuditChannelRemoveUsers = "channel.removeUsers" // one per removed user, when removed by someone else
	AuditChannelRateLimit   = "channel.rateLimit"   // target channel; details rateLimitWindow (ms, 0 = off)
	AuditChannelClose       = "channel.close"       // target channel
	AuditMessageDelete      = "message.delete"      // target message, deleted by someone other than its author; details authorId
	AuditMessageClearFlags  = "message.clearFlags"  // target message; details flagCount (before)
	AuditUserGlobalBan      = "user.globalBan"      // target user; details deleteMessages
	AuditUserGlobalUnban    = "user.globalUnban"    // target user
	AuditUserClearFlags     = "user.clearFlags"     // target user; details flagCount (before)
	AuditUserUpdate         = "user.update"         // target user, changed by an admin; details fields, roles
	AuditUserRevokeTokens   = "user.revokeTokens"   // target user
	AuditUserPurgeMessages  = "user.purgeMessages"  // target user; details deleted, channelId, since, complete
	AuditBlacklistAdd       = "blacklist.add"       // target rule; details isMatchExactWord
	AuditBlacklistDelete    = "blacklist.delete"    // target rule
	AuditBlacklistUpdate    = "blacklist.update"    // target rule (new id); details oldRuleId, isMatchExactWord
	AuditWhitelistAdd       = "whitelist.add"       // target rule
	AuditWhitelistDelete    = "whitelist.delete"    // target rule
	AuditWhitelistUpdate    = "whitelist.update"    // target rule (new id); details oldRuleId
	AuditRolePut            = "role.put"            // target role; details permissions
	AuditWebhookCreate      = "webhook.create"      // target webhook; details url, events
	AuditWebhookUpdate      = "webhook.update"      // target webhook; details url, events
	AuditWebhookDelete      = "webhook.delete"      // target webhook
	AuditWebhookRotate      = "webhook.rotate"      // target webhook (secret rotated)
	AuditWebhookDisable     = "webhook.disable"     // target webhook; details reason
	AuditAdminCreate        = "admin.create"        // target admin (its name); details userId
	AuditAdminRevoke        = "admin.revoke"        // target admin
	AuditAdminRotate        = "admin.rotate"        // target admin
	AuditReportResolve      = "report.resolve"      // target report; details resolution, targetType, targetId, reporterId, subjectId
	AuditUserErase          = "user.erase"          // target user; details deletedMessages, removedReactions, complete
)

// AuditActions lists every audit action, in the order of the reference.
var AuditActions = []string{
	AuditChannelMute, AuditChannelUnmute, AuditChannelMuteUsers, AuditChannelUnmuteUsers,
	AuditChannelBanUsers, AuditChannelUnbanUsers, AuditChannelRemoveUsers, AuditChannelRateLimit,
	AuditChannelClose, AuditMessageDelete, AuditMessageClearFlags, AuditUserGlobalBan,
	AuditUserGlobalUnban, AuditUserClearFlags, AuditUserUpdate, AuditUserRevokeTokens,
	AuditUserPurgeMessages, AuditBlacklistAdd, AuditBlacklistDelete, AuditBlacklistUpdate,
	AuditWhitelistAdd, AuditWhitelistDelete, AuditWhitelistUpdate, AuditRolePut,
	AuditWebhookCreate, AuditWebhookUpdate, AuditWebhookDelete, AuditWebhookRotate,
	AuditWebhookDisable, AuditAdminCreate, AuditAdminRevoke, AuditAdminRotate, AuditReportResolve, AuditUserErase,
}

// The target types of audit entries.
const (
	AuditTargetChannel = "channel"
	AuditTargetUser    = "user"
	AuditTargetMessage = "message"
	AuditTargetRule    = "rule"
	AuditTargetRole    = "role"
	AuditTargetWebhook = "webhook"
	AuditTargetAdmin   = "admin"
	AuditTargetReport  = "report"
)

// auditLog collects the audit entries of one transaction.
type auditLog struct {
	s   *Service
	now Time
	es  []*AuditEntry
}

// newAudit starts the entries of one transaction, all stamped now.
func (s *Service) newAudit(now Time) *auditLog { return &auditLog{s: s, now: now} }

// add records one entry.
func (a *auditLog) add(actorID, action, targetType, targetID, channelID string, details map[string]any) *AuditEntry {
	e := &AuditEntry{AuditID: a.s.newID(), ActorID: actorID, Action: action, TargetType: targetType,
		TargetID: targetID, ChannelID: channelID, Details: details, CreatedAt: a.now}
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	a.es = append(a.es, e)
	return e
}

// write appends the entries in tx.
func (a *auditLog) write(ctx context.Context, tx Tx) error {
	if len(a.es) == 0 {
		return nil
	}
	return tx.AppendAudit(ctx, a.es)
}

// audit records one entry in tx.
func (s *Service) audit(ctx context.Context, tx Tx, actorID, action, targetType, targetID, channelID string, details map[string]any) error {
	a := s.newAudit(s.Now())
	a.add(actorID, action, targetType, targetID, channelID, details)
	return a.write(ctx, tx)
}

// AuditQuery selects audit entries, newest first. Each non-empty filter
// must match exactly; Token continues a query.
type AuditQuery struct {
	ActorID   string
	TargetID  string
	ChannelID string
	Action    string
	Limit     int
	Token     string
}

// AuditList is the response of the audit query: the entries and every
// user they reference (actors and user targets).
type AuditList struct {
	Audit  []AuditEntry `json:"audit"`
	Users  []User       `json:"users"`
	Paging *Paging      `json:"paging,omitempty"`
}

// QueryAudit lists the audit log, newest first, with keyset paging
// (default page 10, at most Limits.MaxPage). Admins only. Errors:
// CodeBadRequest (bad filter, limit or token), CodePermissionDenied.
func (s *Service) QueryAudit(ctx context.Context, actorID string, q AuditQuery) (*AuditList, error) {
	for _, f := range []struct{ name, v string }{{"actorId", q.ActorID}, {"targetId", q.TargetID}, {"channelId", q.ChannelID}} {
		if f.v != "" {
			if err := s.checkAuditValue(f.name, f.v); err != nil {
				return nil, err
			}
		}
	}
	if q.Action != "" && !knownAuditAction(q.Action) {
		return nil, invalid("action", "unknown audit action %s", quote(q.Action))
	}
	limit, err := s.pageSize("options.limit", q.Limit, s.lim.DefaultPage)
	if err != nil {
		return nil, err
	}
	qh := queryHash(q.ActorID, q.TargetID, q.ChannelID, q.Action)
	f := AuditFilter{ActorID: q.ActorID, TargetID: q.TargetID, ChannelID: q.ChannelID, Action: q.Action}
	tok, limit, err := s.openPage("options.token", q.Token, "audit", qh, q.Limit, limit)
	if err != nil {
		return nil, err
	}
	if tok != nil {
		f.After, f.Before = place(tok, &AuditCursor{CreatedAt: tok.at(), AuditID: tok.ID})
	}
	f.Limit = limit + 1
	out := &AuditList{Audit: []AuditEntry{}, Users: []User{}, Paging: &Paging{}}
	err = s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, actAudit, ""); err != nil {
			return err
		}
		es, err := tx.QueryAudit(ctx, f)
		if err != nil {
			return err
		}
		more := len(es) > limit
		if more {
			es = es[:limit]
		}
		if f.Before != nil {
			reverse(es)
		}
		var ids []string
		for _, e := range es {
			if e.Details == nil {
				e.Details = map[string]any{}
			}
			out.Audit = append(out.Audit, *e)
			if e.ActorID != "" {
				ids = append(ids, e.ActorID)
			}
			if e.TargetType == AuditTargetUser {
				ids = append(ids, e.TargetID)
			}
		}
		if len(ids) > 0 {
			us, err := tx.GetUsers(ctx, dedupe(ids))
			if err != nil {
				return err
			}
			out.Users = userValues(us)
		}
		if len(es) == 0 {
			return nil
		}
		first, last := es[0], es[len(es)-1]
		s.setLinks(out.Paging, tok, more,
			pageToken{K: "audit", Q: qh, T: first.CreatedAt.UnixMilli(), ID: first.AuditID, L: limit},
			pageToken{K: "audit", Q: qh, T: last.CreatedAt.UnixMilli(), ID: last.AuditID, L: limit})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkAuditValue validates an id used as an audit filter: targets include
// rule patterns, so the pattern limit applies when it is the larger.
func (s *Service) checkAuditValue(field, v string) error {
	if len(v) > max(s.lim.MaxIDBytes, s.lim.MaxPatternBytes) {
		return invalid(field, "must be at most %d bytes", max(s.lim.MaxIDBytes, s.lim.MaxPatternBytes))
	}
	if hasControl(v) {
		return invalid(field, "must not contain control characters")
	}
	return checkText(field, v)
}

func knownAuditAction(a string) bool {
	for _, x := range AuditActions {
		if x == a {
			return true
		}
	}
	return false
}

// stringsAny returns v as a JSON array value ([] when empty), the form
// details take after a round trip through a store.
func stringsAny(v []string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

// updateDetails describes a user update made by an admin: the fields it
// set and, when it set them, the roles.
func updateDetails(in UpdateUserInput, roles []string) map[string]any {
	fields := []any{}
	if in.DisplayName != nil {
		fields = append(fields, "displayName")
	}
	if in.Metadata != nil {
		fields = append(fields, "metadata")
	}
	d := map[string]any{}
	if in.Roles != nil {
		fields = append(fields, "roles")
		d["roles"] = stringsAny(roles)
	}
	d["fields"] = fields
	return d
}
