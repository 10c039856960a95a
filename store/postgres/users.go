package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

const userCols = `user_id, display_name, roles, metadata, flag_count, hashflag, is_global_ban, created_at, updated_at,
	tokens_revoked_at`

// userSel is what reads return: the columns and the row version.
const userSel = userCols + `, version`

func scanUser(r scanner) (*chat.User, int64, error) {
	var (
		u                chat.User
		roles            pq.StringArray
		md, hf           []byte
		created, updated time.Time
		revoked          sql.NullTime
		version          int64
	)
	if err := r.Scan(&u.UserID, &u.DisplayName, &roles, &md, &u.FlagCount, &hf, &u.IsGlobalBan, &created, &updated, &revoked, &version); err != nil {
		return nil, 0, err
	}
	var err error
	if u.Metadata, err = jsonMap(md); err != nil {
		return nil, 0, err
	}
	if u.Hashflag, err = scanHashflag(hf); err != nil {
		return nil, 0, err
	}
	u.Roles = arrayOut(roles)
	u.CreatedAt, u.UpdatedAt = ct(created), ct(updated)
	u.TokensRevokedAt = ctp(revoked)
	return &u, version, nil
}

func (t *tx) users(ctx context.Context, tmpl string, args ...any) ([]*chat.User, error) {
	var out []*chat.User
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		u, v, err := scanUser(r)
		if err == nil {
			out = append(out, u)
			t.seen(userKey(u.UserID), v)
		}
		return err
	})
	return out, err
}

// searchKey is the case-insensitive form of a name or id that QueryUsers
// matches prefixes against. It is computed in Go (Unicode lowercasing, as
// the other adapters do) because lower() under COLLATE "C" folds ASCII
// only.
func searchKey(s string) string { return strings.ToLower(s) }

// prefixEnd returns the smallest string greater than every string that
// starts with p in byte order (the last rune incremented), or "" when there
// is none. Byte order of UTF-8 is code point order, so the result is valid
// UTF-8 and p <= s < prefixEnd(p) holds exactly for the strings s with
// prefix p.
func prefixEnd(p string) string {
	for p != "" {
		r, size := utf8.DecodeLastRuneInString(p)
		p = p[:len(p)-size]
		if r == utf8.RuneError && size <= 1 {
			// invalid trailing byte: bump the byte itself
			continue
		}
		switch {
		case r == 0xD7FF:
			return p + string(rune(0xE000))
		case r < utf8.MaxRune:
			return p + string(r+1)
		}
	}
	return ""
}

func (t *tx) CreateUser(ctx context.Context, u *chat.User) error {
	md, err := jsonArg(u.Metadata)
	if err != nil {
		return err
	}
	n, err := t.exec(ctx, `INSERT INTO {s}users (`+userCols+`, search_name, search_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING`,
		u.UserID, u.DisplayName, textArray(u.Roles), md, u.FlagCount, hashflagArg(u.Hashflag), u.IsGlobalBan,
		timeArg(u.CreatedAt), timeArg(u.UpdatedAt), timePtrArg(u.TokensRevokedAt), searchKey(u.DisplayName), searchKey(u.UserID))
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeConflict, "user %q already exists", u.UserID)
	}
	t.wrote(userKey(u.UserID), 1)
	return nil
}

// EnsureUsers inserts the missing users in one statement (ON CONFLICT DO
// NOTHING, so concurrent callers do not fail) and reads them all back.
func (t *tx) EnsureUsers(ctx context.Context, ids []string, now time.Time) ([]*chat.User, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = searchKey(id)
	}
	if err := t.query(ctx, `INSERT INTO {s}users (user_id, display_name, search_name, search_id, created_at, updated_at)
		SELECT id, id, k, k, $3, $3 FROM unnest($1::text[], $2::text[]) AS x(id, k)
		ON CONFLICT (user_id) DO NOTHING RETURNING user_id`, []any{textArray(ids), textArray(keys), timeArg(chat.NewTime(now))},
		func(r *sql.Rows) error {
			var id string
			err := r.Scan(&id)
			t.wrote(userKey(id), 1)
			return err
		}); err != nil {
		return nil, err
	}
	return t.GetUsers(ctx, ids)
}

func (t *tx) GetUser(ctx context.Context, userID string) (*chat.User, error) {
	us, err := t.users(ctx, `SELECT `+userSel+` FROM {s}users WHERE user_id = $1`+t.forUpdate(), userID)
	if err != nil {
		return nil, err
	}
	if len(us) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "user %q not found", userID)
	}
	return us[0], nil
}

// GetUsers returns the users that exist among ids in the order of ids (an
// id given twice is returned twice, as EnsureUsers needs).
func (t *tx) GetUsers(ctx context.Context, ids []string) ([]*chat.User, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	found, err := t.users(ctx, `SELECT `+userSel+` FROM {s}users WHERE user_id = ANY($1::text[])
		ORDER BY user_id`+t.forUpdate(), textArray(ids))
	if err != nil {
		return nil, err
	}
	return inIDOrder(ids, found, func(u *chat.User) string { return u.UserID }, func(u *chat.User) *chat.User {
		v := *u
		v.Roles = slices.Clone(u.Roles)
		v.Metadata = cloneJSONMap(u.Metadata)
		v.Hashflag.Hash = slices.Clone(u.Hashflag.Hash)
		return &v
	}), nil
}

// UpdateUser writes only when the user still has the version this
// transaction read (when it read it); otherwise the transaction runs again.
func (t *tx) UpdateUser(ctx context.Context, u *chat.User) error {
	md, err := jsonArg(u.Metadata)
	if err != nil {
		return err
	}
	key := userKey(u.UserID)
	want := t.expected(key)
	var v []int64
	err = t.query(ctx, `UPDATE {s}users SET display_name = $2, search_name = $3, roles = $4, metadata = $5,
		flag_count = $6, hashflag = $7, is_global_ban = $8, updated_at = $9, tokens_revoked_at = $11,
		version = version + 1
		WHERE user_id = $1 AND ($10::bigint IS NULL OR version = $10) RETURNING version`,
		[]any{u.UserID, u.DisplayName, searchKey(u.DisplayName), textArray(u.Roles), md, u.FlagCount,
			hashflagArg(u.Hashflag), u.IsGlobalBan, timeArg(u.UpdatedAt), want, timePtrArg(u.TokensRevokedAt)}, scanVersion(&v))
	if err != nil {
		return err
	}
	if len(v) == 0 {
		if want != nil {
			found, err := t.exists(ctx, `SELECT 1 FROM {s}users WHERE user_id = $1`, u.UserID)
			if err != nil {
				return err
			}
			if found {
				return t.conflict(fmt.Sprintf("user %q", u.UserID))
			}
		}
		return chat.Errorf(chat.CodeNotFound, "user %q not found", u.UserID)
	}
	t.wrote(key, v[0])
	return nil
}

// QueryUsers pages by user_id. A selective search is answered with two
// index range scans, on search_name and on search_id (prefix bounds
// >= p AND < prefixEnd(p)), combined with a BitmapOr; when many users
// match, the planner walks the primary key in user_id order instead and
// stops at the limit.
func (t *tx) QueryUsers(ctx context.Context, f chat.UserFilter) ([]*chat.User, error) {
	var (
		args  argList
		where []string
	)
	if f.Search != "" {
		p := searchKey(f.Search)
		lo := args.add(p)
		if end := prefixEnd(p); end != "" {
			hi := args.add(end)
			where = append(where, "((search_name >= "+lo+" AND search_name < "+hi+") OR (search_id >= "+lo+" AND search_id < "+hi+"))")
		} else {
			where = append(where, "(search_name >= "+lo+" OR search_id >= "+lo+")")
		}
	}
	if f.Flagged {
		where = append(where, "flag_count > 0")
	}
	if f.After != nil {
		where = append(where, "user_id > "+args.add(f.After.UserID))
	}
	if f.Before != nil {
		where = append(where, "user_id < "+args.add(f.Before.UserID))
	}
	q := "SELECT " + userSel + " FROM {s}users"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	if f.Before != nil {
		q += " ORDER BY user_id DESC"
	} else {
		q += " ORDER BY user_id"
	}
	q += limitOffset(&args, f.Limit, 0)
	return t.users(ctx, q, args...)
}
