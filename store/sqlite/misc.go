package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

// Roles.

func scanRole(sc scanner) (*chat.Role, error) {
	var r chat.Role
	var perms string
	var created, updated int64
	if err := sc.Scan(&r.RoleID, &perms, &created, &updated); err != nil {
		return nil, err
	}
	if err := fromJSON(perms, &r.Permissions); err != nil {
		return nil, err
	}
	r.CreatedAt, r.UpdatedAt = fromMs(created), fromMs(updated)
	return &r, nil
}

// PutRole implements chat.RoleStore.
func (t *tx) PutRole(ctx context.Context, r *chat.Role) error {
	perms, err := jsonText(r.Permissions)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO roles (role_id, permissions, created_at, updated_at) VALUES (?,?,?,?)
	ON CONFLICT (role_id) DO UPDATE SET permissions = excluded.permissions, updated_at = excluded.updated_at`,
		r.RoleID, perms, ms(r.CreatedAt), ms(r.UpdatedAt))
	return err
}

// GetRoles implements chat.RoleStore.
func (t *tx) GetRoles(ctx context.Context, ids []string) ([]*chat.Role, error) {
	switch len(ids) {
	case 0:
		return nil, nil
	case 1:
		// The common case (a post by an admin, whose one role is the
		// built-in one): a primary key lookup without a JSON argument.
		return memoKeyed(t, ctx, memoRoles, scanRole, "SELECT role_id, permissions, created_at, updated_at FROM roles WHERE role_id = ?", ids[0])
	}
	return keyed(t, ctx, scanRole, "SELECT role_id, permissions, created_at, updated_at FROM roles WHERE role_id IN "+inIDs+
		" ORDER BY role_id", jsonIDs(ids))
}

// ListRoles implements chat.RoleStore. The filter is applied in Go so that
// case folding is Unicode-aware, exactly as in the other adapters; roles
// are few.
func (t *tx) ListRoles(ctx context.Context, filter string) ([]*chat.Role, error) {
	rs, err := list(t, ctx, scanRole, "SELECT role_id, permissions, created_at, updated_at FROM roles ORDER BY role_id")
	if err != nil || filter == "" {
		return rs, err
	}
	f := lower(filter)
	out := rs[:0]
	for _, r := range rs {
		if strings.Contains(lower(r.RoleID), f) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Rules.

func scanRule(sc scanner) (*chat.Rule, error) {
	var r chat.Rule
	var list string
	var created, updated int64
	if err := sc.Scan(&list, &r.RuleID, &r.IsMatchExactWord, &created, &updated); err != nil {
		return nil, err
	}
	r.List = chat.RuleList(list)
	r.CreatedAt, r.UpdatedAt = fromMs(created), fromMs(updated)
	return &r, nil
}

const ruleCols = "list, rule_id, is_match_exact_word, created_at, updated_at"

// PutRule implements chat.RuleStore.
func (t *tx) PutRule(ctx context.Context, r *chat.Rule) error {
	if _, err := t.exec(ctx, `INSERT INTO rules (`+ruleCols+`) VALUES (?,?,?,?,?)
	ON CONFLICT (list, rule_id) DO UPDATE SET is_match_exact_word = excluded.is_match_exact_word,
	updated_at = excluded.updated_at`,
		string(r.List), r.RuleID, r.IsMatchExactWord, ms(r.CreatedAt), ms(r.UpdatedAt)); err != nil {
		return err
	}
	return t.bumpVersion(ctx, "rules")
}

// ListRules implements chat.RuleStore.
func (t *tx) ListRules(ctx context.Context, l chat.RuleList, ids []string) ([]*chat.Rule, error) {
	if ids == nil {
		return list(t, ctx, scanRule, "SELECT "+ruleCols+" FROM rules WHERE list = "+textParam+" ORDER BY rule_id", string(l))
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return list(t, ctx, scanRule, "SELECT "+ruleCols+" FROM rules WHERE list = "+textParam+" AND rule_id IN "+inIDs+
		" ORDER BY rule_id", string(l), jsonIDs(ids))
}

// DeleteRules implements chat.RuleStore.
func (t *tx) DeleteRules(ctx context.Context, l chat.RuleList, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	n, err := t.execN(ctx, "DELETE FROM rules WHERE list = ? AND rule_id IN "+inIDs, string(l), jsonIDs(ids))
	if err != nil {
		return 0, err
	}
	if n > 0 {
		if err := t.bumpVersion(ctx, "rules"); err != nil {
			return 0, err
		}
	}
	return int(n), nil
}

// RenameRule implements chat.RuleStore.
func (t *tx) RenameRule(ctx context.Context, l chat.RuleList, oldID string, r *chat.Rule) error {
	var n int
	if err := t.row(ctx, "SELECT count(*) FROM rules WHERE list = ? AND rule_id = ?", []any{string(l), oldID}, &n); err != nil {
		return err
	}
	if n == 0 {
		return notFound(string(l)+" entry", oldID)
	}
	if r.RuleID != oldID {
		if err := t.row(ctx, "SELECT count(*) FROM rules WHERE list = ? AND rule_id = ?", []any{string(l), r.RuleID}, &n); err != nil {
			return err
		}
		if n > 0 {
			return conflict(string(l)+" entry", r.RuleID)
		}
	}
	var updated any // a zero UpdatedAt keeps the stored one
	if !r.UpdatedAt.IsZero() {
		updated = ms(r.UpdatedAt)
	}
	if _, err := t.exec(ctx, `UPDATE rules SET rule_id = ?, is_match_exact_word = ?, updated_at = coalesce(?, updated_at)
	WHERE list = ? AND rule_id = ?`, r.RuleID, r.IsMatchExactWord, updated, string(l), oldID); err != nil {
		return asConflict(err, string(l)+" entry", r.RuleID)
	}
	return t.bumpVersion(ctx, "rules")
}

// RulesVersion implements chat.RuleStore.
func (t *tx) RulesVersion(ctx context.Context) (int64, error) { return t.version(ctx, "rules") }

// Flags.

// AddFlag implements chat.FlagStore.
func (t *tx) AddFlag(ctx context.Context, kind, targetID, userID string, now time.Time) (bool, error) {
	n, err := t.execN(ctx, "INSERT OR IGNORE INTO flags (kind, target_id, user_id, created_at) VALUES (?,?,?,?)",
		kind, targetID, userID, ms(chat.NewTime(now)))
	return n > 0, err
}

// ClearFlags implements chat.FlagStore.
func (t *tx) ClearFlags(ctx context.Context, kind, targetID string) error {
	_, err := t.exec(ctx, "DELETE FROM flags WHERE kind = ? AND target_id = ?", kind, targetID)
	return err
}

// Admins.

const adminCols = "name, user_id, token_hash, created_at, revoked_at, password_hash"

func scanAdmin(sc scanner) (*chat.Admin, error) {
	var a chat.Admin
	var created int64
	var revoked sql.NullInt64
	if err := sc.Scan(&a.Name, &a.UserID, &a.TokenHash, &created, &revoked, &a.PasswordHash); err != nil {
		return nil, err
	}
	if len(a.PasswordHash) == 0 {
		a.PasswordHash = nil
	}
	a.CreatedAt, a.RevokedAt = fromMs(created), fromMsp(revoked)
	return &a, nil
}

// CreateAdmin implements chat.AdminStore.
func (t *tx) CreateAdmin(ctx context.Context, a *chat.Admin) error {
	hash := a.TokenHash
	if hash == nil {
		hash = []byte{}
	}
	_, err := t.exec(ctx, "INSERT INTO admins ("+adminCols+") VALUES (?,?,?,?,?,?)",
		a.Name, a.UserID, hash, ms(a.CreatedAt), msp(a.RevokedAt), nullBytes(a.PasswordHash))
	return asConflict(err, "admin", a.Name)
}

// GetAdminByTokenHash implements chat.AdminStore.
func (t *tx) GetAdminByTokenHash(ctx context.Context, hash []byte) (*chat.Admin, error) {
	if hash == nil {
		hash = []byte{}
	}
	as, err := keyed(t, ctx, scanAdmin, "SELECT "+adminCols+" FROM admins WHERE token_hash = ? LIMIT 1", hash)
	if err != nil {
		return nil, err
	}
	if len(as) == 0 {
		return nil, &chat.Error{Code: chat.CodeNotFound, Message: "admin not found"}
	}
	return as[0], nil
}

// ListAdmins implements chat.AdminStore.
func (t *tx) ListAdmins(ctx context.Context) ([]*chat.Admin, error) {
	return list(t, ctx, scanAdmin, "SELECT "+adminCols+" FROM admins ORDER BY name")
}

// RevokeAdmin implements chat.AdminStore.
func (t *tx) RevokeAdmin(ctx context.Context, name string, now time.Time) error {
	n, err := t.execN(ctx, "UPDATE admins SET revoked_at = coalesce(revoked_at, ?) WHERE name = ?",
		ms(chat.NewTime(now)), name)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("admin", name)
	}
	return nil
}

// RotateAdmin implements chat.AdminStore.
func (t *tx) RotateAdmin(ctx context.Context, name string, hash []byte) error {
	n, err := t.execN(ctx, "UPDATE admins SET token_hash = ?, revoked_at = NULL WHERE name = ?", hash, name)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("admin", name)
	}
	return nil
}

// Blobs.

// PutBlob implements chat.BlobStore.
func (t *tx) PutBlob(ctx context.Context, b *chat.Blob) error {
	data := b.Data
	if data == nil {
		data = []byte{}
	}
	_, err := t.exec(ctx, `INSERT INTO blobs (message_id, name, channel_id, content_type, data, created_at)
	VALUES (?,?,?,?,?,?) ON CONFLICT (message_id, name) DO UPDATE SET channel_id = excluded.channel_id,
	content_type = excluded.content_type, data = excluded.data, created_at = excluded.created_at`,
		b.MessageID, b.Name, b.ChannelID, b.ContentType, data, ms(b.CreatedAt))
	return err
}

// GetBlob implements chat.BlobStore.
func (t *tx) GetBlob(ctx context.Context, messageID, name string) (*chat.Blob, error) {
	var b chat.Blob
	var created int64
	err := t.row(ctx, `SELECT message_id, name, channel_id, content_type, data, created_at FROM blobs
	WHERE message_id = ? AND name = ?`, []any{messageID, name},
		&b.MessageID, &b.Name, &b.ChannelID, &b.ContentType, &b.Data, &created)
	if err != nil {
		return nil, asNotFound(err, "file", messageID+"/"+name)
	}
	if b.Data == nil {
		b.Data = []byte{}
	}
	b.CreatedAt = fromMs(created)
	return &b, nil
}

// DeleteBlobs implements chat.BlobStore.
func (t *tx) DeleteBlobs(ctx context.Context, messageID string) error {
	_, err := t.exec(ctx, "DELETE FROM blobs WHERE message_id = ?", messageID)
	return err
}

// DeleteChannelBlobs implements chat.BlobStore.
func (t *tx) DeleteChannelBlobs(ctx context.Context, channelID string) error {
	_, err := t.exec(ctx, "DELETE FROM blobs WHERE channel_id = ?", channelID)
	return err
}

// Meta.

// GetMeta implements chat.MetaStore.
func (t *tx) GetMeta(ctx context.Context, key string) (string, error) {
	var v string
	if err := t.row(ctx, "SELECT value FROM meta WHERE key = ?", []any{key}, &v); err != nil {
		return "", asNotFound(err, "meta key", key)
	}
	return v, nil
}

// PutMetaIfAbsent implements chat.MetaStore.
func (t *tx) PutMetaIfAbsent(ctx context.Context, key, value string) (string, error) {
	if _, err := t.exec(ctx, "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", key, value); err != nil {
		return "", err
	}
	return t.GetMeta(ctx, key)
}
