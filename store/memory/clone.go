package memory

import (
	"encoding/json"
	"maps"
	"math"
	"slices"

	chat "github.com/chatengine/chat"
)

// normJSON returns a deep copy of a JSON-like value (custom data,
// metadata, audit details) as encoding/json would decode it into an `any`
// (maps map[string]any, arrays []any, numbers float64), as the SQL adapters
// return it.
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

// nt is chat.NewTime(t), without its costly Truncate when t is already whole milliseconds.
func nt(t chat.Time) chat.Time {
	if u := t.UTC(); u.Nanosecond()%1e6 == 0 {
		return chat.Time{Time: u}
	}
	return chat.NewTime(t.Time)
}

func ntp(t *chat.Time) *chat.Time {
	if t == nil {
		return nil
	}
	return new(nt(*t))
}

// clone returns a copy of *p that fix completed (deep copies, times).
func clone[T any](p *T, fix func(v *T)) *T {
	v := *p
	fix(&v)
	return &v
}

func cloneChannel(c *chat.Channel) *chat.Channel { v, _ := copyChannel(c); return v }

// copyChannel is cloneChannel with the error of metadata that cannot be
// JSON; copyMessage and copyUser are alike.
func copyChannel(c *chat.Channel) (*chat.Channel, error) {
	md, err := normMap(c.Metadata)
	return clone(c, func(v *chat.Channel) {
		v.Metadata, v.Tags, v.MuteTimeout, v.LastActivity = md, slices.Clone(c.Tags), ntp(c.MuteTimeout), nt(c.LastActivity)
		v.CreatedAt, v.UpdatedAt = nt(c.CreatedAt), nt(c.UpdatedAt)
	}), err
}

func cloneMessage(m *chat.Message) *chat.Message { v, _ := copyMessage(m); return v }

func copyMessage(m *chat.Message) (*chat.Message, error) {
	data, err := normMap(m.Data)
	return clone(m, func(v *chat.Message) {
		v.Data, v.Tags, v.Reactions = data, slices.Clone(m.Tags), maps.Clone(m.Reactions)
		v.Hashflag.Hash, v.MentionedUserIDs = slices.Clone(m.Hashflag.Hash), slices.Clone(m.MentionedUserIDs)
		v.CreatedAt, v.UpdatedAt, v.EditedAt = nt(m.CreatedAt), nt(m.UpdatedAt), ntp(m.EditedAt)
	}), err
}

func cloneUser(u *chat.User) *chat.User { v, _ := copyUser(u); return v }

func copyUser(u *chat.User) (*chat.User, error) {
	md, err := normMap(u.Metadata)
	return clone(u, func(v *chat.User) {
		v.Metadata, v.Roles, v.Hashflag.Hash = md, slices.Clone(u.Roles), slices.Clone(u.Hashflag.Hash)
		v.CreatedAt, v.UpdatedAt = nt(u.CreatedAt), nt(u.UpdatedAt)
		v.TokensRevokedAt, v.LastActiveAt = ntp(u.TokensRevokedAt), ntp(u.LastActiveAt)
	}), err
}

func cloneAudit(e *chat.AuditEntry) *chat.AuditEntry { v, _ := copyAudit(e); return v }

func copyAudit(e *chat.AuditEntry) (*chat.AuditEntry, error) {
	d, err := normMap(e.Details)
	return clone(e, func(v *chat.AuditEntry) { v.Details, v.CreatedAt = d, nt(e.CreatedAt) }), err
}

func cloneChannelUser(cu *chat.ChannelUser) *chat.ChannelUser {
	return clone(cu, func(v *chat.ChannelUser) {
		v.MuteTimeout, v.CreatedAt, v.UpdatedAt = ntp(cu.MuteTimeout), nt(cu.CreatedAt), nt(cu.UpdatedAt)
	})
}

func cloneRole(r *chat.Role) *chat.Role {
	return clone(r, func(v *chat.Role) {
		v.Permissions, v.CreatedAt, v.UpdatedAt = slices.Clone(r.Permissions), nt(r.CreatedAt), nt(r.UpdatedAt)
	})
}

func cloneRule(r *chat.Rule) *chat.Rule {
	return clone(r, func(v *chat.Rule) { v.CreatedAt, v.UpdatedAt = nt(r.CreatedAt), nt(r.UpdatedAt) })
}

func cloneReaction(r *chat.Reaction) *chat.Reaction {
	return clone(r, func(v *chat.Reaction) { v.CreatedAt = nt(r.CreatedAt) })
}

func cloneAdmin(a *chat.Admin) *chat.Admin {
	return clone(a, func(v *chat.Admin) {
		v.TokenHash, v.PasswordHash, v.CreatedAt, v.RevokedAt = slices.Clone(a.TokenHash), nil, nt(a.CreatedAt), ntp(a.RevokedAt)
		if len(a.PasswordHash) > 0 {
			v.PasswordHash = slices.Clone(a.PasswordHash)
		}
	})
}

func cloneSession(s *chat.AdminSession) *chat.AdminSession {
	return clone(s, func(v *chat.AdminSession) {
		v.IDHash, v.CreatedAt, v.LastSeenAt = slices.Clone(s.IDHash), nt(s.CreatedAt), nt(s.LastSeenAt)
	})
}

func cloneWebhook(w *chat.Webhook) *chat.Webhook {
	return clone(w, func(v *chat.Webhook) {
		v.Events, v.CreatedAt, v.UpdatedAt = slices.Clone(w.Events), nt(w.CreatedAt), nt(w.UpdatedAt)
	})
}

func cloneDelivery(d *chat.Delivery) *chat.Delivery {
	return clone(d, func(v *chat.Delivery) {
		v.Body, v.NextAttemptAt, v.LeaseUntil = slices.Clone(d.Body), nt(d.NextAttemptAt), ntp(d.LeaseUntil)
		v.CreatedAt, v.UpdatedAt = nt(d.CreatedAt), nt(d.UpdatedAt)
	})
}

func cloneAttempt(a *chat.DeliveryAttempt) *chat.DeliveryAttempt {
	return clone(a, func(v *chat.DeliveryAttempt) { v.At = nt(a.At) })
}

func cloneEvent(e *chat.Event) *chat.Event {
	return clone(e, func(v *chat.Event) {
		v.UserIDs, v.Data, v.CreatedAt = slices.Clone(e.UserIDs), slices.Clone(e.Data), nt(e.CreatedAt)
	})
}

// cloneBlob keeps empty data as an empty slice, as the SQL stores
// return it.
func cloneBlob(b *chat.Blob) *chat.Blob {
	return clone(b, func(v *chat.Blob) { v.Data, v.CreatedAt = append([]byte{}, b.Data...), nt(b.CreatedAt) })
}

func cloneTicket(tk *chat.StreamTicket) *chat.StreamTicket {
	return clone(tk, func(v *chat.StreamTicket) {
		v.ExpiresAt, v.TokenHash = nt(tk.ExpiresAt), slices.Clone(tk.TokenHash)
		v.TokenIssuedAt, v.TokenExpiresAt = ntp(tk.TokenIssuedAt), ntp(tk.TokenExpiresAt)
	})
}

func cloneReport(r *chat.Report) *chat.Report {
	return clone(r, func(v *chat.Report) {
		if r.Resolution != nil {
			v.Resolution = clone(r.Resolution, func(*chat.ReportResolution) {})
		}
		v.CreatedAt, v.ResolvedAt = nt(r.CreatedAt), ntp(r.ResolvedAt)
	})
}

func cloneDevice(d *chat.Device) *chat.Device {
	return clone(d, func(v *chat.Device) { v.CreatedAt, v.UpdatedAt = nt(d.CreatedAt), nt(d.UpdatedAt) })
}

func cloneSetting(n *chat.NotificationSetting) *chat.NotificationSetting {
	return clone(n, func(v *chat.NotificationSetting) { v.UpdatedAt = ntp(n.UpdatedAt) })
}

// clonePush copies a push without its device's provider and token (they
// are not stored with it).
func clonePush(p *chat.PushDelivery) *chat.PushDelivery {
	return clone(p, func(v *chat.PushDelivery) {
		v.NextAttemptAt, v.CreatedAt, v.UpdatedAt = nt(p.NextAttemptAt), nt(p.CreatedAt), nt(p.UpdatedAt)
		v.LeaseUntil, v.Provider, v.Token = ntp(p.LeaseUntil), "", ""
	})
}

func cloneBatch(b *chat.PushBatch) *chat.PushBatch {
	return clone(b, func(v *chat.PushBatch) {
		v.UserIDs, v.DeviceIDs, v.CreatedAt = slices.Clone(b.UserIDs), slices.Clone(b.DeviceIDs), nt(b.CreatedAt)
	})
}

func cloneProcess(p *chat.PresenceProcess) *chat.PresenceProcess {
	return clone(p, func(v *chat.PresenceProcess) { v.RenewedAt, v.ExpiresAt = nt(p.RenewedAt), nt(p.ExpiresAt) })
}
