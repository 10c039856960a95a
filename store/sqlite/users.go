package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	chat "github.com/chatengine/chat"
)

const userCols = `u.user_id, u.display_name, u.roles, u.metadata, u.flag_count, u.hashflag, u.is_global_ban,
	u.created_at, u.updated_at, u.tokens_revoked_at, u.online, u.last_active_at`

func scanUser(sc scanner) (*chat.User, error) {
	var u chat.User
	var roles, md, hf string
	var created, updated int64
	var revoked, active sql.NullInt64
	if err := sc.Scan(&u.UserID, &u.DisplayName, &roles, &md, &u.FlagCount, &hf, &u.IsGlobalBan,
		&created, &updated, &revoked, &u.Online, &active); err != nil {
		return nil, err
	}
	if err := fromJSON(roles, &u.Roles); err != nil {
		return nil, err
	}
	if err := fromJSON(md, &u.Metadata); err != nil {
		return nil, err
	}
	if err := fromJSON(hf, &u.Hashflag); err != nil {
		return nil, err
	}
	u.CreatedAt, u.UpdatedAt = fromMs(created), fromMs(updated)
	u.TokensRevokedAt = fromMsp(revoked)
	u.LastActiveAt = fromMsp(active)
	return &u, nil
}

const insertUser = `INSERT INTO users (user_id, display_name, search_name, search_id, roles, metadata,
	flag_count, hashflag, is_global_ban, created_at, updated_at, tokens_revoked_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`

// CreateUser implements chat.UserStore.
func (t *tx) CreateUser(ctx context.Context, u *chat.User) error {
	roles, err := jsonText(u.Roles)
	if err != nil {
		return err
	}
	md, err := jsonText(u.Metadata)
	if err != nil {
		return err
	}
	hf, err := jsonText(u.Hashflag)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, insertUser, u.UserID, u.DisplayName, foldKey(u.DisplayName), foldKey(u.UserID),
		roles, md, u.FlagCount, hf, u.IsGlobalBan, ms(u.CreatedAt), ms(u.UpdatedAt), msp(u.TokensRevokedAt))
	if err != nil {
		return asConflict(err, "user", u.UserID)
	}
	return t.writeUserKeys(ctx, u.UserID, u.DisplayName, false)
}

// EnsureUsers implements chat.UserStore.
func (t *tx) EnsureUsers(ctx context.Context, ids []string, now time.Time) ([]*chat.User, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	n := ms(chat.NewTime(now))
	hf, _ := jsonText(chat.Hashflag{})
	for _, id := range ids {
		added, err := t.execN(ctx, insertUser+" ON CONFLICT (user_id) DO NOTHING",
			id, id, foldKey(id), foldKey(id), "null", "null", 0, hf, false, n, n, nil)
		if err != nil {
			return nil, err
		}
		if added > 0 {
			if err := t.writeUserKeys(ctx, id, id, false); err != nil {
				return nil, err
			}
		}
	}
	return t.GetUsers(ctx, ids)
}

// GetUser implements chat.UserStore.
func (t *tx) GetUser(ctx context.Context, userID string) (*chat.User, error) {
	rows, err := memoKeyed(t, ctx, memoUsers, scanUser, "SELECT "+userCols+" FROM users u WHERE u.user_id = ?", userID)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, notFound("user", userID)
	}
	return rows[0], nil
}

// GetUsers implements chat.UserStore.
func (t *tx) GetUsers(ctx context.Context, ids []string) ([]*chat.User, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	us, err := keyed(t, ctx, scanUser, "SELECT "+userCols+" FROM users u WHERE u.user_id IN "+inIDs, jsonIDs(ids))
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*chat.User, len(us))
	for _, u := range us {
		byID[u.UserID] = u
	}
	out := make([]*chat.User, 0, len(us))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if u := byID[id]; u != nil {
			if seen[id] {
				// A repeated id gets its own copy.
				c := *u
				u = &c
			}
			seen[id] = true
			out = append(out, u)
		}
	}
	return out, nil
}

// UpdateUser implements chat.UserStore.
func (t *tx) UpdateUser(ctx context.Context, u *chat.User) error {
	roles, err := jsonText(u.Roles)
	if err != nil {
		return err
	}
	md, err := jsonText(u.Metadata)
	if err != nil {
		return err
	}
	hf, err := jsonText(u.Hashflag)
	if err != nil {
		return err
	}
	n, err := t.execN(ctx, `UPDATE users SET display_name = ?, search_name = ?, roles = ?, metadata = ?,
	flag_count = ?, hashflag = ?, is_global_ban = ?, updated_at = ?, tokens_revoked_at = ? WHERE user_id = ?`,
		u.DisplayName, foldKey(u.DisplayName), roles, md, u.FlagCount, hf, u.IsGlobalBan, ms(u.UpdatedAt),
		msp(u.TokensRevokedAt), u.UserID)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("user", u.UserID)
	}
	return t.writeUserKeys(ctx, u.UserID, u.DisplayName, true)
}

// foldKey returns the search key of s: every rune replaced by one
// canonical member of its Unicode simple case-folding orbit (the lower-case
// one where there is one; "K", "k" and the Kelvin sign all become "k").
// Two strings match case-insensitively, rune by rune, exactly when their
// keys are equal, so "p is a case-insensitive prefix of s" is
// strings.HasPrefix(foldKey(s), foldKey(p)): a range on an indexed column.
func foldKey(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	// Prefer the lower-case member when it belongs to the same orbit.
	l := unicode.ToLower(m)
	for f := unicode.SimpleFold(l); ; f = unicode.SimpleFold(f) {
		if f == m {
			return l
		}
		if f == l {
			return m
		}
	}
}

// QueryUsers implements chat.UserStore. Search is a prefix range on
// user_keys.key (chat.IDKey and chat.NameKeys of each user), never LIKE.
func (t *tx) QueryUsers(ctx context.Context, f chat.UserFilter) ([]*chat.User, error) {
	var q strings.Builder
	var args []any
	q.WriteString("SELECT " + userCols + " FROM users u WHERE 1")
	if f.Search != "" {
		c, a := wordCond("k.key", f.Search, true)
		q.WriteString(" AND u.user_id IN (SELECT k.user_id FROM user_keys k WHERE " + c + ")")
		args = append(args, a...)
	}
	if f.Flagged {
		q.WriteString(" AND u.flag_count > 0")
	}
	if f.After != nil {
		q.WriteString(" AND u.user_id > ?")
		args = append(args, f.After.UserID)
	}
	if f.Before != nil {
		q.WriteString(" AND u.user_id < ?")
		args = append(args, f.Before.UserID)
	}
	if f.Before != nil {
		q.WriteString(" ORDER BY u.user_id DESC")
	} else {
		q.WriteString(" ORDER BY u.user_id ASC")
	}
	q.WriteString(" LIMIT " + limitParam)
	args = append(args, limitArg(f.Limit))
	return list(t, ctx, scanUser, q.String(), args...)
}
