package memory

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"

	chat "github.com/chatengine/chat"
)

// The memory store keeps its own copies of everything it is given and hands
// out fresh copies of everything it returns, so callers can never reach
// stored state through a pointer, map or slice. Stored values are treated as
// immutable: a write replaces a stored struct (or one of its maps or slices)
// with a new value rather than editing it in place, which is what makes the
// shallow snapshots in the undo log correct.
//
// JSON-like values (custom data, metadata) are normalized on write to what
// encoding/json produces when it decodes into an `any`: maps become
// map[string]any, slices []any, every number float64. The SQL adapters store
// these values as JSON, so normalizing here makes all adapters return the
// same Go values.

// normJSON returns a normalized deep copy of a JSON-like value.
func normJSON(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string, bool:
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
	case int:
		return float64(x), nil
	case int8:
		return float64(x), nil
	case int16:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint:
		return float64(x), nil
	case uint8:
		return float64(x), nil
	case uint16:
		return float64(x), nil
	case uint32:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case float32:
		return normJSON(float64(x))
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return nil, chat.WrapError(chat.CodeBadRequest, err, "invalid JSON number")
		}
		return f, nil
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out, nil
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out, nil
	}
	// Anything else (structs, typed slices and maps, json.RawMessage) goes
	// through encoding/json, exactly as a SQL adapter would store it.
	b, err := json.Marshal(v)
	if err != nil {
		return nil, chat.WrapError(chat.CodeBadRequest, err, "value cannot be stored as JSON")
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, chat.WrapError(chat.CodeInternal, err, "value cannot be stored as JSON")
	}
	return out, nil
}

// normMap normalizes a JSON object; nil stays nil.
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

// copyJSON deep-copies a normalized JSON-like value. Values that are not
// normalized (which the store never holds) are copied with reflection.
func copyJSON(v any) any {
	switch x := v.(type) {
	case nil, string, bool, float64:
		return x
	case map[string]any:
		return copyMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyJSON(e)
		}
		return out
	}
	return reflectCopy(reflect.ValueOf(v)).Interface()
}

// copyMap deep-copies a JSON object; nil stays nil.
func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = copyJSON(e)
	}
	return out
}

// reflectCopy is the slow, general deep copy used only for values the
// store did not normalize.
func reflectCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			out.SetMapIndex(it.Key(), reflectCopy(it.Value()))
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			out.Index(i).Set(reflectCopy(v.Index(i)))
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(reflectCopy(v.Elem()))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		c := reflectCopy(v.Elem())
		out := reflect.New(v.Type()).Elem()
		out.Set(c)
		return out
	}
	return v
}

// nt normalizes a time to UTC with millisecond precision.
func nt(t chat.Time) chat.Time { return chat.NewTime(t.Time) }

// ntp normalizes an optional time; nil stays nil.
func ntp(t *chat.Time) *chat.Time {
	if t == nil {
		return nil
	}
	v := chat.NewTime(t.Time)
	return &v
}

// cpt copies an optional (already normalized) time.
func cpt(t *chat.Time) *chat.Time {
	if t == nil {
		return nil
	}
	v := *t
	return &v
}

func cloneHashflag(h chat.Hashflag) chat.Hashflag {
	h.Hash = slices.Clone(h.Hash)
	return h
}

func cloneCounts(m map[string]int) map[string]int {
	if m == nil {
		return nil
	}
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Per-type copies. The norm* functions make the stored copy of a value a
// caller passed in; the cp* functions make the copy handed back to a caller.

func normChannel(c *chat.Channel) (*chat.Channel, error) {
	out := *c
	md, err := normMap(c.Metadata)
	if err != nil {
		return nil, err
	}
	out.Metadata = md
	out.Tags = slices.Clone(c.Tags)
	out.MuteTimeout = ntp(c.MuteTimeout)
	out.LastActivity = nt(c.LastActivity)
	out.CreatedAt = nt(c.CreatedAt)
	out.UpdatedAt = nt(c.UpdatedAt)
	return &out, nil
}

func cpChannel(c *chat.Channel) *chat.Channel {
	out := *c
	out.Metadata = copyMap(c.Metadata)
	out.Tags = slices.Clone(c.Tags)
	out.MuteTimeout = cpt(c.MuteTimeout)
	return &out
}

func normChannelUser(cu *chat.ChannelUser) *chat.ChannelUser {
	out := *cu
	out.MuteTimeout = ntp(cu.MuteTimeout)
	out.CreatedAt = nt(cu.CreatedAt)
	out.UpdatedAt = nt(cu.UpdatedAt)
	return &out
}

func cpChannelUser(cu *chat.ChannelUser) *chat.ChannelUser {
	out := *cu
	out.MuteTimeout = cpt(cu.MuteTimeout)
	return &out
}

func normUser(u *chat.User) (*chat.User, error) {
	out := *u
	md, err := normMap(u.Metadata)
	if err != nil {
		return nil, err
	}
	out.Metadata = md
	out.Roles = slices.Clone(u.Roles)
	out.Hashflag = cloneHashflag(u.Hashflag)
	out.CreatedAt = nt(u.CreatedAt)
	out.UpdatedAt = nt(u.UpdatedAt)
	// Presence is written by SetPresence alone.
	out.Online, out.LastActiveAt = false, nil
	if u.TokensRevokedAt != nil {
		r := nt(*u.TokensRevokedAt)
		out.TokensRevokedAt = &r
	}
	return &out, nil
}

func cpUser(u *chat.User) *chat.User {
	out := *u
	out.TokensRevokedAt = cpt(u.TokensRevokedAt)
	out.LastActiveAt = cpt(u.LastActiveAt)
	out.Metadata = copyMap(u.Metadata)
	out.Roles = slices.Clone(u.Roles)
	out.Hashflag = cloneHashflag(u.Hashflag)
	return &out
}

func normRole(r *chat.Role) *chat.Role {
	out := *r
	out.Permissions = slices.Clone(r.Permissions)
	out.CreatedAt = nt(r.CreatedAt)
	out.UpdatedAt = nt(r.UpdatedAt)
	return &out
}

func cpRole(r *chat.Role) *chat.Role {
	out := *r
	out.Permissions = slices.Clone(r.Permissions)
	return &out
}

func normRule(r *chat.Rule) *chat.Rule {
	out := *r
	out.CreatedAt = nt(r.CreatedAt)
	out.UpdatedAt = nt(r.UpdatedAt)
	return &out
}

func cpRule(r *chat.Rule) *chat.Rule { out := *r; return &out }

func normReaction(r *chat.Reaction) *chat.Reaction {
	out := *r
	out.CreatedAt = nt(r.CreatedAt)
	return &out
}

func cpReaction(r *chat.Reaction) *chat.Reaction { out := *r; return &out }

func normAdmin(a *chat.Admin) *chat.Admin {
	out := *a
	out.TokenHash = slices.Clone(a.TokenHash)
	out.PasswordHash = nil
	if len(a.PasswordHash) > 0 {
		out.PasswordHash = slices.Clone(a.PasswordHash)
	}
	out.CreatedAt = nt(a.CreatedAt)
	out.RevokedAt = ntp(a.RevokedAt)
	return &out
}

func cpAdmin(a *chat.Admin) *chat.Admin {
	out := *a
	out.TokenHash = slices.Clone(a.TokenHash)
	out.PasswordHash = slices.Clone(a.PasswordHash)
	out.RevokedAt = cpt(a.RevokedAt)
	return &out
}

func normWebhook(w *chat.Webhook) *chat.Webhook {
	out := *w
	out.Events = slices.Clone(w.Events)
	out.CreatedAt = nt(w.CreatedAt)
	out.UpdatedAt = nt(w.UpdatedAt)
	return &out
}

func cpWebhook(w *chat.Webhook) *chat.Webhook {
	out := *w
	out.Events = slices.Clone(w.Events)
	return &out
}

func normDelivery(d *chat.Delivery) *chat.Delivery {
	out := *d
	out.Body = slices.Clone(d.Body)
	out.NextAttemptAt = nt(d.NextAttemptAt)
	out.LeaseUntil = ntp(d.LeaseUntil)
	out.CreatedAt = nt(d.CreatedAt)
	out.UpdatedAt = nt(d.UpdatedAt)
	return &out
}

func cpDelivery(d *chat.Delivery) *chat.Delivery {
	out := *d
	out.Body = slices.Clone(d.Body)
	out.LeaseUntil = cpt(d.LeaseUntil)
	return &out
}

func normAttempt(a *chat.DeliveryAttempt) *chat.DeliveryAttempt {
	out := *a
	out.At = nt(a.At)
	return &out
}

func cpAttempt(a *chat.DeliveryAttempt) *chat.DeliveryAttempt { out := *a; return &out }

func normBlob(b *chat.Blob) *chat.Blob {
	out := *b
	out.Data = slices.Clone(b.Data)
	if out.Data == nil {
		out.Data = []byte{}
	}
	out.CreatedAt = nt(b.CreatedAt)
	return &out
}

func cpBlob(b *chat.Blob) *chat.Blob {
	out := *b
	out.Data = slices.Clone(b.Data)
	return &out
}
