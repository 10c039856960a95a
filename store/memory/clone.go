package memory

import (
	"encoding/json"
	"maps"
	"math"
	"slices"

	chat "github.com/chatengine/chat"
)

// The store keeps its own copies of everything it is given and hands out
// fresh copies of everything it returns, so callers never reach stored
// state through a pointer, map or slice. The clone functions below make
// those copies, with times normalized to UTC milliseconds as the SQL
// adapters store them.
//
// JSON-like values (custom data, metadata, audit details) are stored as
// encoding/json would decode them into an `any` (maps map[string]any,
// arrays []any, numbers float64), so every adapter returns the same Go
// values.

// normJSON returns a normalized deep copy of a JSON-like value.
func normJSON(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, chat.Errorf(chat.CodeBadRequest, "value %v cannot be stored as JSON", x)
		}
		return x, nil
	case map[string]any:
		return normMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normJSON(e)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	}
	// Other numbers, typed slices and maps, structs: through
	// encoding/json, as a SQL adapter stores them.
	b, err := json.Marshal(v)
	if err != nil {
		return nil, chat.WrapError(chat.CodeBadRequest, err, "value cannot be stored as JSON")
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// normMap normalizes a JSON object into a new map; nil stays nil.
func normMap(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		n, err := normJSON(e)
		if err != nil {
			return nil, err
		}
		out[k] = n
	}
	return out, nil
}

// copyMap deep-copies a normalized JSON object (which cannot fail).
func copyMap(m map[string]any) map[string]any {
	out, _ := normMap(m)
	return out
}

func nt(t chat.Time) chat.Time { return chat.NewTime(t.Time) }

func ntp(t *chat.Time) *chat.Time {
	if t == nil {
		return nil
	}
	return chat.TimePtr(t.Time)
}

func cloneChannel(c *chat.Channel) *chat.Channel {
	v := *c
	v.Metadata, v.Tags, v.MuteTimeout = copyMap(c.Metadata), slices.Clone(c.Tags), ntp(c.MuteTimeout)
	v.LastActivity, v.CreatedAt, v.UpdatedAt = nt(c.LastActivity), nt(c.CreatedAt), nt(c.UpdatedAt)
	return &v
}

func cloneChannelUser(cu *chat.ChannelUser) *chat.ChannelUser {
	v := *cu
	v.MuteTimeout, v.CreatedAt, v.UpdatedAt = ntp(cu.MuteTimeout), nt(cu.CreatedAt), nt(cu.UpdatedAt)
	return &v
}

func cloneMessage(m *chat.Message) *chat.Message {
	v := *m
	v.Data, v.Tags, v.Reactions = copyMap(m.Data), slices.Clone(m.Tags), maps.Clone(m.Reactions)
	v.Hashflag.Hash, v.MentionedUserIDs = slices.Clone(m.Hashflag.Hash), slices.Clone(m.MentionedUserIDs)
	v.CreatedAt, v.UpdatedAt, v.EditedAt = nt(m.CreatedAt), nt(m.UpdatedAt), ntp(m.EditedAt)
	return &v
}

func cloneUser(u *chat.User) *chat.User {
	v := *u
	v.Metadata, v.Roles, v.Hashflag.Hash = copyMap(u.Metadata), slices.Clone(u.Roles), slices.Clone(u.Hashflag.Hash)
	v.CreatedAt, v.UpdatedAt = nt(u.CreatedAt), nt(u.UpdatedAt)
	v.TokensRevokedAt, v.LastActiveAt = ntp(u.TokensRevokedAt), ntp(u.LastActiveAt)
	return &v
}

func cloneRole(r *chat.Role) *chat.Role {
	v := *r
	v.Permissions, v.CreatedAt, v.UpdatedAt = slices.Clone(r.Permissions), nt(r.CreatedAt), nt(r.UpdatedAt)
	return &v
}

func cloneRule(r *chat.Rule) *chat.Rule {
	v := *r
	v.CreatedAt, v.UpdatedAt = nt(r.CreatedAt), nt(r.UpdatedAt)
	return &v
}

func cloneReaction(r *chat.Reaction) *chat.Reaction {
	v := *r
	v.CreatedAt = nt(r.CreatedAt)
	return &v
}

func cloneAdmin(a *chat.Admin) *chat.Admin {
	v := *a
	v.TokenHash, v.PasswordHash = slices.Clone(a.TokenHash), nil
	if len(a.PasswordHash) > 0 {
		v.PasswordHash = slices.Clone(a.PasswordHash)
	}
	v.CreatedAt, v.RevokedAt = nt(a.CreatedAt), ntp(a.RevokedAt)
	return &v
}

func cloneSession(s *chat.AdminSession) *chat.AdminSession {
	v := *s
	v.IDHash, v.CreatedAt, v.LastSeenAt = slices.Clone(s.IDHash), nt(s.CreatedAt), nt(s.LastSeenAt)
	return &v
}

func cloneWebhook(w *chat.Webhook) *chat.Webhook {
	v := *w
	v.Events, v.CreatedAt, v.UpdatedAt = slices.Clone(w.Events), nt(w.CreatedAt), nt(w.UpdatedAt)
	return &v
}

func cloneDelivery(d *chat.Delivery) *chat.Delivery {
	v := *d
	v.Body, v.NextAttemptAt, v.LeaseUntil = slices.Clone(d.Body), nt(d.NextAttemptAt), ntp(d.LeaseUntil)
	v.CreatedAt, v.UpdatedAt = nt(d.CreatedAt), nt(d.UpdatedAt)
	return &v
}

func cloneAttempt(a *chat.DeliveryAttempt) *chat.DeliveryAttempt {
	v := *a
	v.At = nt(a.At)
	return &v
}

func cloneEvent(e *chat.Event) *chat.Event {
	v := *e
	v.UserIDs, v.Data, v.CreatedAt = slices.Clone(e.UserIDs), slices.Clone(e.Data), nt(e.CreatedAt)
	return &v
}

func cloneBlob(b *chat.Blob) *chat.Blob {
	v := *b
	v.Data, v.CreatedAt = slices.Clone(b.Data), nt(b.CreatedAt)
	if v.Data == nil {
		v.Data = []byte{}
	}
	return &v
}

func cloneAudit(e *chat.AuditEntry) *chat.AuditEntry {
	v := *e
	v.Details, v.CreatedAt = copyMap(e.Details), nt(e.CreatedAt)
	return &v
}

func cloneTicket(tk *chat.StreamTicket) *chat.StreamTicket {
	v := *tk
	v.ExpiresAt, v.TokenHash = nt(tk.ExpiresAt), slices.Clone(tk.TokenHash)
	v.TokenIssuedAt, v.TokenExpiresAt = ntp(tk.TokenIssuedAt), ntp(tk.TokenExpiresAt)
	return &v
}

func cloneReport(r *chat.Report) *chat.Report {
	v := *r
	if r.Resolution != nil {
		res := *r.Resolution
		v.Resolution = &res
	}
	v.CreatedAt, v.ResolvedAt = nt(r.CreatedAt), ntp(r.ResolvedAt)
	return &v
}

func cloneDevice(d *chat.Device) *chat.Device {
	v := *d
	v.CreatedAt, v.UpdatedAt = nt(d.CreatedAt), nt(d.UpdatedAt)
	return &v
}

func cloneSetting(n *chat.NotificationSetting) *chat.NotificationSetting {
	v := *n
	v.UpdatedAt = ntp(n.UpdatedAt)
	return &v
}

// clonePush copies a push without its device's provider and token (they
// are not stored with it).
func clonePush(p *chat.PushDelivery) *chat.PushDelivery {
	v := *p
	v.NextAttemptAt, v.CreatedAt, v.UpdatedAt = nt(p.NextAttemptAt), nt(p.CreatedAt), nt(p.UpdatedAt)
	v.LeaseUntil, v.Provider, v.Token = ntp(p.LeaseUntil), "", ""
	return &v
}

func cloneBatch(b *chat.PushBatch) *chat.PushBatch {
	v := *b
	v.UserIDs, v.DeviceIDs, v.CreatedAt = slices.Clone(b.UserIDs), slices.Clone(b.DeviceIDs), nt(b.CreatedAt)
	return &v
}

func cloneProcess(p *chat.PresenceProcess) *chat.PresenceProcess {
	v := *p
	v.RenewedAt, v.ExpiresAt = nt(p.RenewedAt), nt(p.ExpiresAt)
	return &v
}
