package postgres

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

const userCols = `user_id, display_name, roles, metadata, flag_count, hashflag, is_global_ban, created_at, updated_at,
	tokens_revoked_at`

// userReadCols are the columns a read returns: userCols and the presence,
// which only SetPresence writes.
const userReadCols = userCols + `, online, last_active_at`

func scanUser(r scanner) (*chat.User, error) {
	var (
		u                chat.User
		roles            pq.StringArray
		md, hf           []byte
		created, updated time.Time
		revoked, active  sql.NullTime
	)
	if err := r.Scan(&u.UserID, &u.DisplayName, &roles, &md, &u.FlagCount, &hf, &u.IsGlobalBan, &created, &updated, &revoked,
		&u.Online, &active); err != nil {
		return nil, err
	}
	var err error
	if u.Metadata, err = jsonMap(md); err != nil {
		return nil, err
	}
	if u.Hashflag, err = scanHashflag(hf); err != nil {
		return nil, err
	}
	u.Roles = arrayOut(roles)
	u.CreatedAt, u.UpdatedAt = ct(created), ct(updated)
	u.TokensRevokedAt = ctp(revoked)
	u.LastActiveAt = ctp(active)
	return &u, nil
}

func (t *tx) users(ctx context.Context, tmpl string, args ...any) ([]*chat.User, error) {
	var out []*chat.User
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		u, err := scanUser(r)
		if err == nil {
			out = append(out, u)
		}
		return err
	})
	return out, err
}

// GetUser, GetUsers and EnsureUsers read users without a lock, unless an
// earlier run of the same Update wrote them (tx.lockUsers): nearly every
// transaction reads its acting user, and locking that row would queue
// every write of one user (an admin's, a bot's) behind the others. LockUser
// locks. UpdateUser makes a transaction that writes a user it read without
// a lock run again (see Store.Update).

// readUsers records the users an Update read by id, and whether it holds
// their rows.
func (t *tx) readUsers(us []*chat.User, locked bool) {
	if !t.write {
		return
	}
	if t.userRows == nil {
		t.userRows = make(map[string]bool)
	}
	for _, u := range us {
		t.userRows[u.UserID] = t.userRows[u.UserID] || locked
	}
}

// heldUser records that the transaction holds the user's row.
func (t *tx) heldUser(id string) {
	if !t.write {
		return
	}
	if t.userRows == nil {
		t.userRows = make(map[string]bool)
	}
	t.userRows[id] = true
}

// lockUsersOf returns the locking clause for a read of ids: the rows are
// locked when any of them is to be read with a lock.
func (t *tx) lockUsersOf(ids ...string) string {
	if t.write {
		for _, id := range ids {
			if t.lockUsers[id] {
				return " FOR NO KEY UPDATE"
			}
		}
	}
	return ""
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
	t.heldUser(u.UserID)
	return t.writeUserKeys(ctx, []string{u.UserID}, []string{u.DisplayName}, false)
}

// EnsureUsers inserts the missing users in one statement (ON CONFLICT DO
// NOTHING, so concurrent callers do not fail) and reads them all back (as
// GetUsers: without a lock unless they are to be locked).
func (t *tx) EnsureUsers(ctx context.Context, ids []string, now time.Time) ([]*chat.User, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = searchKey(id)
	}
	var added []string
	if err := t.query(ctx, `INSERT INTO {s}users (user_id, display_name, search_name, search_id, created_at, updated_at)
		SELECT id, id, k, k, $3, $3 FROM unnest($1::text[], $2::text[]) AS x(id, k)
		ON CONFLICT (user_id) DO NOTHING RETURNING user_id`, []any{textArray(ids), textArray(keys), timeArg(chat.NewTime(now))},
		func(r *sql.Rows) error {
			var id string
			err := r.Scan(&id)
			t.heldUser(id)
			added = append(added, id)
			return err
		}); err != nil {
		return nil, err
	}
	if err := t.writeUserKeys(ctx, added, added, false); err != nil {
		return nil, err
	}
	return t.GetUsers(ctx, ids)
}

func (t *tx) GetUser(ctx context.Context, userID string) (*chat.User, error) {
	if u, ok := t.prefetchedUser(userID); ok {
		if u == nil {
			return nil, chat.Errorf(chat.CodeNotFound, "user %q not found", userID)
		}
		return u, nil
	}
	return t.userByID(ctx, userID, t.lockUsersOf(userID))
}

// LockUser implements chat.LockStore: in an Update the row is held (FOR
// NO KEY UPDATE) until the transaction ends, so UpdateUser of it writes
// without running the transaction again.
func (t *tx) LockUser(ctx context.Context, userID string) (*chat.User, error) {
	return t.userByID(ctx, userID, t.lockRows())
}

// userByID reads one user by id with lock ("" or the lock clause) and
// notes the read (see readUsers).
func (t *tx) userByID(ctx context.Context, userID, lock string) (*chat.User, error) {
	us, err := t.users(ctx, `SELECT `+userReadCols+` FROM {s}users WHERE user_id = $1`+lock, userID)
	if err != nil {
		return nil, err
	}
	if len(us) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "user %q not found", userID)
	}
	t.readUsers(us, lock != "")
	return us[0], nil
}

// GetUsers returns the users that exist among ids in the order of ids (an
// id given twice is returned twice, as EnsureUsers needs).
func (t *tx) GetUsers(ctx context.Context, ids []string) ([]*chat.User, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	lock := t.lockUsersOf(ids...)
	found, err := t.users(ctx, `SELECT `+userReadCols+` FROM {s}users WHERE user_id = ANY($1::text[])
		ORDER BY user_id`+lock, textArray(ids))
	if err != nil {
		return nil, err
	}
	t.readUsers(found, lock != "")
	return inIDOrder(ids, found, func(u *chat.User) string { return u.UserID }, func(u *chat.User) *chat.User {
		v := *u
		v.Roles = slices.Clone(u.Roles)
		v.Metadata = cloneJSONMap(u.Metadata)
		v.Hashflag.Hash = slices.Clone(u.Hashflag.Hash)
		return &v
	}), nil
}

// errRerun is what UpdateUser returns when the transaction must run again
// to read the user with a lock; Update does that before anyone sees it.
var errRerun = chat.Errorf(chat.CodeUnavailable, "store busy: a user was written after an unlocked read, try again")

// UpdateUser replaces the user's fields. When this transaction read the
// user without a lock, what fn computed may rest on a row that another
// transaction has changed since: the transaction is rolled back and run
// again, reading that user with a lock (FOR NO KEY UPDATE) this time.
func (t *tx) UpdateUser(ctx context.Context, u *chat.User) error {
	if held, read := t.userRows[u.UserID]; read && !held {
		if t.lockUsers == nil {
			t.lockUsers = make(map[string]bool)
		}
		t.lockUsers[u.UserID] = true
		t.rerun, t.again = true, errRerun
		return errRerun
	}
	md, err := jsonArg(u.Metadata)
	if err != nil {
		return err
	}
	n, err := t.exec(ctx, `UPDATE {s}users SET display_name = $2, search_name = $3, roles = $4, metadata = $5,
		flag_count = $6, hashflag = $7, is_global_ban = $8, updated_at = $9, tokens_revoked_at = $10
		WHERE user_id = $1`,
		u.UserID, u.DisplayName, searchKey(u.DisplayName), textArray(u.Roles), md, u.FlagCount,
		hashflagArg(u.Hashflag), u.IsGlobalBan, timeArg(u.UpdatedAt), timePtrArg(u.TokensRevokedAt))
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "user %q not found", u.UserID)
	}
	t.heldUser(u.UserID)
	return t.writeUserKeys(ctx, []string{u.UserID}, []string{u.DisplayName}, true)
}

// QueryUsers pages by user_id. A search is a prefix range on
// user_keys.key (chat.IDKey and chat.NameKeys of each user, bounds >= p AND
// < prefixEnd(p)), whose user ids are matched against the primary key.
func (t *tx) QueryUsers(ctx context.Context, f chat.UserFilter) ([]*chat.User, error) {
	var (
		args  argList
		where []string
	)
	if f.Search != "" {
		where = append(where, "user_id IN (SELECT k.user_id FROM {s}user_keys k WHERE "+wordCond(&args, "k.key", f.Search, true)+")")
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
	q := "SELECT " + userReadCols + " FROM {s}users"
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
