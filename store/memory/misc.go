package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

// ---- rules ----

func (t *tx) bumpRules() { replace(t, &t.d.rulesVersion, t.d.rulesVersion+1) }

func (t *tx) PutRule(_ context.Context, r *chat.Rule) error {
	if err := t.writable(); err != nil {
		return err
	}
	v := normRule(r)
	list := innerMap(t, t.d.rules, v.List)
	if old, ok := list[v.RuleID]; ok {
		v.CreatedAt = old.CreatedAt
	}
	setKey(t, list, v.RuleID, v)
	t.bumpRules()
	return nil
}

func (t *tx) ListRules(_ context.Context, list chat.RuleList, ids []string) ([]*chat.Rule, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	rules := t.d.rules[list]
	var out []*chat.Rule
	if ids == nil {
		for _, r := range rules {
			out = append(out, cpRule(r))
		}
	} else {
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			if r, ok := rules[id]; ok && !seen[id] {
				seen[id] = true
				out = append(out, cpRule(r))
			}
		}
	}
	slices.SortFunc(out, func(a, b *chat.Rule) int { return cmp.Compare(a.RuleID, b.RuleID) })
	return out, nil
}

func (t *tx) DeleteRules(_ context.Context, list chat.RuleList, ids []string) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	rules := t.d.rules[list]
	n := 0
	for _, id := range ids {
		if _, ok := rules[id]; ok {
			delKey(t, rules, id)
			n++
		}
	}
	if n > 0 {
		t.bumpRules()
	}
	return n, nil
}

func (t *tx) RenameRule(_ context.Context, list chat.RuleList, oldID string, r *chat.Rule) error {
	if err := t.writable(); err != nil {
		return err
	}
	rules := t.d.rules[list]
	old, ok := rules[oldID]
	if !ok {
		return chat.Errorf(chat.CodeNotFound, "%s rule %q not found", list, oldID)
	}
	if r.RuleID != oldID {
		if _, taken := rules[r.RuleID]; taken {
			return conflict("%s rule %q already exists", list, r.RuleID)
		}
	}
	v := *old
	v.List = list
	v.RuleID = r.RuleID
	v.IsMatchExactWord = r.IsMatchExactWord
	if !r.UpdatedAt.IsZero() {
		v.UpdatedAt = nt(r.UpdatedAt)
	}
	delKey(t, rules, oldID)
	setKey(t, rules, v.RuleID, &v)
	t.bumpRules()
	return nil
}

func (t *tx) RulesVersion(_ context.Context) (int64, error) {
	if err := t.readable(); err != nil {
		return 0, err
	}
	return t.d.rulesVersion, nil
}

// ---- admins ----

func (t *tx) CreateAdmin(_ context.Context, a *chat.Admin) error {
	if err := t.writable(); err != nil {
		return err
	}
	if _, ok := t.d.admins[a.Name]; ok {
		return conflict("admin %q already exists", a.Name)
	}
	if _, ok := t.d.adminHashes[string(a.TokenHash)]; ok {
		return conflict("admin token already in use")
	}
	v := normAdmin(a)
	setKey(t, t.d.admins, v.Name, v)
	setKey(t, t.d.adminHashes, string(v.TokenHash), v.Name)
	return nil
}

func (t *tx) GetAdminByTokenHash(_ context.Context, hash []byte) (*chat.Admin, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	name, ok := t.d.adminHashes[string(hash)]
	if !ok {
		return nil, chat.Errorf(chat.CodeNotFound, "admin token not found")
	}
	return cpAdmin(t.d.admins[name]), nil
}

func (t *tx) ListAdmins(_ context.Context) ([]*chat.Admin, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	out := make([]*chat.Admin, 0, len(t.d.admins))
	for _, a := range t.d.admins {
		out = append(out, cpAdmin(a))
	}
	slices.SortFunc(out, func(a, b *chat.Admin) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

func (t *tx) RevokeAdmin(_ context.Context, name string, now time.Time) error {
	if err := t.writable(); err != nil {
		return err
	}
	p, ok := t.d.admins[name]
	if !ok {
		return notFound("admin", name)
	}
	if p.RevokedAt != nil {
		return nil
	}
	v := *p
	v.RevokedAt = chat.TimePtr(now)
	replace(t, p, v)
	return nil
}

func (t *tx) RotateAdmin(_ context.Context, name string, hash []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	p, ok := t.d.admins[name]
	if !ok {
		return notFound("admin", name)
	}
	if other, ok := t.d.adminHashes[string(hash)]; ok && other != name {
		return conflict("admin token already in use")
	}
	v := *p
	v.TokenHash = append([]byte(nil), hash...)
	v.RevokedAt = nil
	delKey(t, t.d.adminHashes, string(p.TokenHash))
	setKey(t, t.d.adminHashes, string(v.TokenHash), name)
	replace(t, p, v)
	return nil
}

// ---- blobs ----

func (t *tx) PutBlob(_ context.Context, b *chat.Blob) error {
	if err := t.writable(); err != nil {
		return err
	}
	v := normBlob(b)
	byName := innerMap(t, t.d.blobs, v.MessageID)
	if old, ok := byName[v.Name]; ok {
		t.uncountBlob(old)
	}
	setKey(t, byName, v.Name, v)
	byMsg := innerMap(t, t.d.chanBlobs, v.ChannelID)
	setKey(t, byMsg, v.MessageID, byMsg[v.MessageID]+1)
	return nil
}

// uncountBlob drops b from the per-channel blob index.
func (t *tx) uncountBlob(b *chat.Blob) {
	byMsg := t.d.chanBlobs[b.ChannelID]
	if byMsg == nil {
		return
	}
	if n := byMsg[b.MessageID]; n > 1 {
		setKey(t, byMsg, b.MessageID, n-1)
	} else {
		delKey(t, byMsg, b.MessageID)
	}
}

func (t *tx) GetBlob(_ context.Context, messageID, name string) (*chat.Blob, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	b, ok := t.d.blobs[messageID][name]
	if !ok {
		return nil, chat.Errorf(chat.CodeNotFound, "blob %q of message %q not found", name, messageID)
	}
	return cpBlob(b), nil
}

func (t *tx) DeleteBlobs(_ context.Context, messageID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	for _, b := range t.d.blobs[messageID] {
		t.uncountBlob(b)
	}
	delKey(t, t.d.blobs, messageID)
	return nil
}

func (t *tx) DeleteChannelBlobs(_ context.Context, channelID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	byMsg := t.d.chanBlobs[channelID]
	if byMsg == nil {
		return nil
	}
	// Collect first: deleting a message's blobs edits byMsg.
	msgIDs := make([]string, 0, len(byMsg))
	for id := range byMsg {
		msgIDs = append(msgIDs, id)
	}
	for _, msgID := range msgIDs {
		byName := t.d.blobs[msgID]
		for name, b := range byName {
			if b.ChannelID == channelID {
				t.uncountBlob(b)
				delKey(t, byName, name)
			}
		}
		if len(byName) == 0 {
			delKey(t, t.d.blobs, msgID)
		}
	}
	return nil
}

// ---- meta ----

func (t *tx) GetMeta(_ context.Context, key string) (string, error) {
	if err := t.readable(); err != nil {
		return "", err
	}
	v, ok := t.d.meta[key]
	if !ok {
		return "", notFound("meta key", key)
	}
	return v, nil
}

func (t *tx) PutMetaIfAbsent(_ context.Context, key, value string) (string, error) {
	if err := t.writable(); err != nil {
		return "", err
	}
	if v, ok := t.d.meta[key]; ok {
		return v, nil
	}
	setKey(t, t.d.meta, key, value)
	return value, nil
}
