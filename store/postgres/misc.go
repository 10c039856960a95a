package postgres

import (
	"context"
	"database/sql"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

// ---- roles ----

const roleCols = `role_id, permissions, created_at, updated_at`

func (t *tx) roles(ctx context.Context, tmpl string, args ...any) ([]*chat.Role, error) {
	var out []*chat.Role
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		var (
			x                chat.Role
			perms            pq.StringArray
			created, updated time.Time
		)
		if err := r.Scan(&x.RoleID, &perms, &created, &updated); err != nil {
			return err
		}
		x.Permissions = arrayOut(perms)
		x.CreatedAt, x.UpdatedAt = ct(created), ct(updated)
		out = append(out, &x)
		return nil
	})
	return out, err
}

func (t *tx) PutRole(ctx context.Context, r *chat.Role) error {
	_, err := t.exec(ctx, `INSERT INTO {s}roles (`+roleCols+`) VALUES ($1, $2, $3, $4)
		ON CONFLICT (role_id) DO UPDATE SET permissions = EXCLUDED.permissions, updated_at = EXCLUDED.updated_at`,
		r.RoleID, textArray(r.Permissions), timeArg(r.CreatedAt), timeArg(r.UpdatedAt))
	return err
}

// GetRoles returns the roles that exist among ids, in the order of ids.
func (t *tx) GetRoles(ctx context.Context, ids []string) ([]*chat.Role, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rs, ok := t.prefetchedRolesFor(ids)
	if ok {
		return inIDOrder(ids, rs, func(r *chat.Role) string { return r.RoleID }, nil), nil
	}
	rs, err := t.roles(ctx, `SELECT `+roleCols+` FROM {s}roles WHERE role_id = ANY($1::text[])`, textArray(ids))
	if err != nil {
		return nil, err
	}
	return inIDOrder(ids, rs, func(r *chat.Role) string { return r.RoleID }, nil), nil
}

// ListRoles filters in Go: there are few roles, and Unicode
// case-insensitive matching must agree with the other adapters.
func (t *tx) ListRoles(ctx context.Context, filter string) ([]*chat.Role, error) {
	rs, err := t.roles(ctx, `SELECT `+roleCols+` FROM {s}roles ORDER BY role_id`)
	if err != nil || filter == "" {
		return rs, err
	}
	lf := strings.ToLower(filter)
	out := rs[:0]
	for _, r := range rs {
		if strings.Contains(strings.ToLower(r.RoleID), lf) {
			out = append(out, r)
		}
	}
	return out, nil
}

// ---- rules ----

const ruleCols = `list, rule_id, is_match_exact_word, created_at, updated_at`

// bumpRules is appended to rule writes: it increments the rules version in
// the writing transaction when the write changed a row.
const bumpRules = `, bump AS (UPDATE {s}versions SET value = value + 1 WHERE name = 'rules' AND EXISTS (SELECT 1 FROM w))`

func (t *tx) rules(ctx context.Context, tmpl string, args ...any) ([]*chat.Rule, error) {
	var out []*chat.Rule
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		var (
			x                chat.Rule
			list             string
			created, updated time.Time
		)
		if err := r.Scan(&list, &x.RuleID, &x.IsMatchExactWord, &created, &updated); err != nil {
			return err
		}
		x.List = chat.RuleList(list)
		x.CreatedAt, x.UpdatedAt = ct(created), ct(updated)
		out = append(out, &x)
		return nil
	})
	return out, err
}

func (t *tx) PutRule(ctx context.Context, r *chat.Rule) error {
	_, err := t.exec(ctx, `WITH w AS (
			INSERT INTO {s}rules (`+ruleCols+`) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (list, rule_id) DO UPDATE SET is_match_exact_word = EXCLUDED.is_match_exact_word,
				updated_at = EXCLUDED.updated_at
			RETURNING 1
		)`+bumpRules+` SELECT 1`,
		string(r.List), r.RuleID, r.IsMatchExactWord, timeArg(r.CreatedAt), timeArg(r.UpdatedAt))
	return err
}

func (t *tx) ListRules(ctx context.Context, list chat.RuleList, ids []string) ([]*chat.Rule, error) {
	if ids == nil {
		return t.rules(ctx, `SELECT `+ruleCols+` FROM {s}rules WHERE list = $1 ORDER BY rule_id`, string(list))
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return t.rules(ctx, `SELECT `+ruleCols+` FROM {s}rules WHERE list = $1 AND rule_id = ANY($2::text[])
		ORDER BY rule_id`, string(list), textArray(ids))
}

func (t *tx) DeleteRules(ctx context.Context, list chat.RuleList, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var n int
	err := t.queryRow(ctx, `WITH w AS (
			DELETE FROM {s}rules WHERE list = $1 AND rule_id = ANY($2::text[]) RETURNING 1
		)`+bumpRules+` SELECT count(*) FROM w`, []any{string(list), textArray(ids)}, &n)
	return n, err
}

func (t *tx) RenameRule(ctx context.Context, list chat.RuleList, oldID string, r *chat.Rule) error {
	var oldExists, newExists bool
	if err := t.queryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM {s}rules WHERE list = $1 AND rule_id = $2),
			$2 <> $3 AND EXISTS (SELECT 1 FROM {s}rules WHERE list = $1 AND rule_id = $3)`,
		[]any{string(list), oldID, r.RuleID}, &oldExists, &newExists); err != nil {
		return err
	}
	if !oldExists {
		return chat.Errorf(chat.CodeNotFound, "%s rule %q not found", list, oldID)
	}
	if newExists {
		return chat.Errorf(chat.CodeConflict, "%s rule %q already exists", list, r.RuleID)
	}
	var updated any
	if !r.UpdatedAt.IsZero() {
		updated = timeArg(r.UpdatedAt)
	}
	_, err := t.exec(ctx, `WITH w AS (
			UPDATE {s}rules SET rule_id = $3, is_match_exact_word = $4, updated_at = COALESCE($5, updated_at)
			WHERE list = $1 AND rule_id = $2 RETURNING 1
		)`+bumpRules+` SELECT 1`,
		string(list), oldID, r.RuleID, r.IsMatchExactWord, updated)
	return err
}

func (t *tx) RulesVersion(ctx context.Context) (int64, error) {
	if t.vers != nil {
		return t.vers.rules, nil
	}
	var v int64
	err := t.queryRow(ctx, `SELECT value FROM {s}versions WHERE name = 'rules'`, nil, &v)
	return v, err
}

// ---- admins ----

const adminCols = `name, user_id, token_hash, created_at, revoked_at, password_hash`

func (t *tx) admins(ctx context.Context, tmpl string, args ...any) ([]*chat.Admin, error) {
	var out []*chat.Admin
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		var (
			a       chat.Admin
			created time.Time
			revoked sql.NullTime
		)
		if err := r.Scan(&a.Name, &a.UserID, &a.TokenHash, &created, &revoked, &a.PasswordHash); err != nil {
			return err
		}
		if len(a.PasswordHash) == 0 {
			a.PasswordHash = nil
		}
		a.CreatedAt, a.RevokedAt = ct(created), ctp(revoked)
		out = append(out, &a)
		return nil
	})
	return out, err
}

func (t *tx) CreateAdmin(ctx context.Context, a *chat.Admin) error {
	n, err := t.exec(ctx, `INSERT INTO {s}admins (`+adminCols+`) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
		a.Name, a.UserID, bytesArg(a.TokenHash), timeArg(a.CreatedAt), timePtrArg(a.RevokedAt), nullBytes(a.PasswordHash))
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeConflict, "admin %q or its token already exists", a.Name)
	}
	return nil
}

func (t *tx) GetAdminByTokenHash(ctx context.Context, hash []byte) (*chat.Admin, error) {
	as, err := t.admins(ctx, `SELECT `+adminCols+` FROM {s}admins WHERE token_hash = $1`, bytesArg(hash))
	if err != nil {
		return nil, err
	}
	if len(as) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "admin token not found")
	}
	return as[0], nil
}

func (t *tx) ListAdmins(ctx context.Context) ([]*chat.Admin, error) {
	return t.admins(ctx, `SELECT `+adminCols+` FROM {s}admins ORDER BY name`)
}

func (t *tx) RevokeAdmin(ctx context.Context, name string, now time.Time) error {
	n, err := t.exec(ctx, `UPDATE {s}admins SET revoked_at = COALESCE(revoked_at, $2) WHERE name = $1`,
		name, timeArg(chat.NewTime(now)))
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "admin %q not found", name)
	}
	return nil
}

func (t *tx) RotateAdmin(ctx context.Context, name string, hash []byte) error {
	n, err := t.exec(ctx, `UPDATE {s}admins SET token_hash = $2, revoked_at = NULL WHERE name = $1`,
		name, bytesArg(hash))
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "admin %q not found", name)
	}
	return nil
}

// bytesArg passes a byte slice as bytea; nil becomes empty, never NULL.
func bytesArg(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// ---- blobs ----

func (t *tx) PutBlob(ctx context.Context, b *chat.Blob) error {
	_, err := t.exec(ctx, `INSERT INTO {s}blobs (message_id, name, channel_id, content_type, data, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (message_id, name) DO UPDATE SET channel_id = EXCLUDED.channel_id,
			content_type = EXCLUDED.content_type, data = EXCLUDED.data, created_at = EXCLUDED.created_at`,
		b.MessageID, b.Name, b.ChannelID, b.ContentType, bytesArg(b.Data), timeArg(b.CreatedAt))
	return err
}

func (t *tx) GetBlob(ctx context.Context, messageID, name string) (*chat.Blob, error) {
	var (
		b       = chat.Blob{MessageID: messageID, Name: name}
		created time.Time
	)
	err := t.queryRow(ctx, `SELECT channel_id, content_type, data, created_at FROM {s}blobs
		WHERE message_id = $1 AND name = $2`, []any{messageID, name}, &b.ChannelID, &b.ContentType, &b.Data, &created)
	if chat.ErrorCode(err) == chat.CodeNotFound {
		return nil, chat.Errorf(chat.CodeNotFound, "blob %q of message %q not found", name, messageID)
	}
	if err != nil {
		return nil, err
	}
	if b.Data == nil {
		b.Data = []byte{}
	}
	b.CreatedAt = ct(created)
	return &b, nil
}

func (t *tx) DeleteBlobs(ctx context.Context, messageID string) error {
	_, err := t.exec(ctx, `DELETE FROM {s}blobs WHERE message_id = $1`, messageID)
	return err
}

func (t *tx) DeleteChannelBlobs(ctx context.Context, channelID string) error {
	_, err := t.exec(ctx, `DELETE FROM {s}blobs WHERE channel_id = $1`, channelID)
	return err
}

// ---- meta ----

func (t *tx) GetMeta(ctx context.Context, key string) (string, error) {
	var v string
	err := t.queryRow(ctx, `SELECT value FROM {s}meta WHERE key = $1`, []any{key}, &v)
	if chat.ErrorCode(err) == chat.CodeNotFound {
		return "", chat.Errorf(chat.CodeNotFound, "meta key %q not found", key)
	}
	return v, err
}

// PutMetaIfAbsent inserts and then reads in a second statement, whose
// fresh snapshot sees a value that a concurrent transaction committed
// first.
func (t *tx) PutMetaIfAbsent(ctx context.Context, key, value string) (string, error) {
	if _, err := t.exec(ctx, `INSERT INTO {s}meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, key, value); err != nil {
		return "", err
	}
	var v string
	err := t.queryRow(ctx, `SELECT value FROM {s}meta WHERE key = $1`, []any{key}, &v)
	return v, err
}
