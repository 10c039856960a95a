package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var userCases = []tcase{
	{"CreateGet", testUserCreateGet},
	{"CreateConflict", testUserConflict},
	{"NotFound", testUserNotFound},
	{"EnsureUsers", testEnsureUsers},
	{"GetUsers", testGetUsers},
	{"Update", testUserUpdate},
	{"TokensRevokedAt", testUserTokensRevokedAt},
	{"QueryFilters", testUserQueryFilters},
	{"QueryPaging", testUserQueryPaging},
	{"QueryPagingConcurrentInserts", testUserPagingConcurrent},
	{"Isolation", testUserIsolation},
}

var roleCases = []tcase{
	{"PutGetList", testRoles},
	{"Isolation", testRoleIsolation},
}

func fullUser() *chat.User {
	return &chat.User{
		UserID: "user-1", DisplayName: "Zoë", Roles: []string{"mod", "vip"},
		Metadata:  map[string]any{"age": 30.0, "tags": []any{"a", "b"}, "o": map[string]any{"k": "v"}},
		FlagCount: 1, Hashflag: chat.Hashflag{Bits: 32, Hashes: 2, Hash: []uint32{3}},
		IsGlobalBan: true, CreatedAt: at(100), UpdatedAt: at(200),
	}
}

func testUserCreateGet(t *testing.T, e *env) {
	e.createUsers(fullUser(), newUser("plain", "Plain"))
	require.Equal(t, cUser(t, fullUser()), cUser(t, e.user("user-1")))
	got := e.user("plain")
	require.Equal(t, cUser(t, newUser("plain", "Plain")), cUser(t, got))
	require.False(t, got.IsGlobalBan)
}

func testUserConflict(t *testing.T, e *env) {
	e.createUsers(newUser("u", "First"))
	err := e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.CreateUser(e.ctx, newUser("u", "Second")) })
	requireConflict(t, err, "duplicate user id")
	require.Equal(t, "First", e.user("u").DisplayName)
}

func testUserNotFound(t *testing.T, e *env) {
	_, err := readErr(e, func(tx chat.Tx) (*chat.User, error) { return tx.GetUser(e.ctx, "missing") })
	requireNotFound(t, err, "GetUser")
	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.UpdateUser(e.ctx, newUser("missing", "x")) })
	requireNotFound(t, err, "UpdateUser")
}

func testEnsureUsers(t *testing.T, e *env) {
	e.createUsers(fullUser())
	now := at(7777)
	got := write(e, func(tx chat.Tx) ([]*chat.User, error) {
		return tx.EnsureUsers(e.ctx, []string{"new-b", "user-1", "new-a"}, now.Time)
	})
	require.Equal(t, []string{"new-b", "user-1", "new-a"}, userIDs(got), "in the order of ids")
	require.Equal(t, cUser(t, fullUser()), cUser(t, got[1]), "an existing user is returned unchanged")
	for _, u := range []*chat.User{got[0], got[2], e.user("new-a"), e.user("new-b")} {
		want := &chat.User{UserID: u.UserID, DisplayName: u.UserID, CreatedAt: now, UpdatedAt: now}
		require.Equal(t, cUser(t, want), cUser(t, u), "created with displayName = userId")
	}
	require.Equal(t, cUser(t, fullUser()), cUser(t, e.user("user-1")))
	// Again: nothing changes.
	again := write(e, func(tx chat.Tx) ([]*chat.User, error) {
		return tx.EnsureUsers(e.ctx, []string{"new-a"}, at(9999).Time)
	})
	require.Len(t, again, 1)
	require.True(t, now.Equal(again[0].CreatedAt.Time))
	require.True(t, now.Equal(e.user("new-a").UpdatedAt.Time))
}

func testGetUsers(t *testing.T, e *env) {
	e.createUsers(newUser("a", "A"), newUser("b", "B"), newUser("c", "C"))
	got := read(e, func(tx chat.Tx) ([]*chat.User, error) { return tx.GetUsers(e.ctx, []string{"c", "missing", "a"}) })
	require.Equal(t, []string{"c", "a"}, userIDs(got), "existing users in the order of ids")
	require.Equal(t, cUser(t, newUser("c", "C")), cUser(t, got[0]))
	got = read(e, func(tx chat.Tx) ([]*chat.User, error) { return tx.GetUsers(e.ctx, nil) })
	require.Empty(t, got)
}

func testUserUpdate(t *testing.T, e *env) {
	e.createUsers(fullUser())
	upd := fullUser()
	upd.DisplayName = "New Name"
	upd.Roles = []string{"admin"}
	upd.Metadata = map[string]any{"only": "this"}
	upd.FlagCount = 3
	upd.Hashflag = chat.Hashflag{Bits: 64, Hashes: 3, Hash: []uint32{1, 2}}
	upd.IsGlobalBan = false
	upd.UpdatedAt = at(999)
	upd.CreatedAt = at(1) // not written
	e.update(func(tx chat.Tx) error { return tx.UpdateUser(e.ctx, upd) })
	want := *upd
	want.CreatedAt = at(100)
	require.Equal(t, cUser(t, &want), cUser(t, e.user("user-1")))

	upd.Roles = nil
	upd.Metadata = nil
	upd.Hashflag = chat.Hashflag{}
	e.update(func(tx chat.Tx) error { return tx.UpdateUser(e.ctx, upd) })
	got := e.user("user-1")
	require.Empty(t, got.Roles)
	require.Empty(t, got.Metadata)
	require.Empty(t, got.Hashflag.Hash)
}

// testUserTokensRevokedAt: the revocation time of a user's tokens is
// stored by CreateUser and UpdateUser, read back by every read, cleared by
// an update without it, and absent on users made by EnsureUsers.
func testUserTokensRevokedAt(t *testing.T, e *env) {
	u := fullUser()
	rev := at(150)
	u.TokensRevokedAt = &rev
	e.createUsers(u)
	require.Equal(t, cUser(t, u), cUser(t, e.user("user-1")))
	got := read(e, func(tx chat.Tx) ([]*chat.User, error) { return tx.GetUsers(e.ctx, []string{"user-1"}) })
	require.NotNil(t, got[0].TokensRevokedAt)
	require.True(t, rev.Equal(got[0].TokensRevokedAt.Time))

	later := at(4242)
	u.TokensRevokedAt = &later
	e.update(func(tx chat.Tx) error { return tx.UpdateUser(e.ctx, u) })
	require.True(t, later.Equal(e.user("user-1").TokensRevokedAt.Time), "UpdateUser writes it")
	qs := read(e, func(tx chat.Tx) ([]*chat.User, error) {
		return tx.QueryUsers(e.ctx, chat.UserFilter{Search: "user-1", Limit: 5})
	})
	require.Len(t, qs, 1)
	require.True(t, later.Equal(qs[0].TokensRevokedAt.Time), "QueryUsers reads it")

	u.TokensRevokedAt = nil
	e.update(func(tx chat.Tx) error { return tx.UpdateUser(e.ctx, u) })
	require.Nil(t, e.user("user-1").TokensRevokedAt, "an update without it clears it")

	made := write(e, func(tx chat.Tx) ([]*chat.User, error) {
		return tx.EnsureUsers(e.ctx, []string{"fresh"}, at(10).Time)
	})
	require.Nil(t, made[0].TokensRevokedAt)
	require.Nil(t, e.user("fresh").TokensRevokedAt)
}

// users for the query cases, in userId order (byte order).
func queryUsers(e *env) []string {
	dave := newUser("dave", "Dave")
	dave.FlagCount = 2
	zed := newUser("zed", "Zed")
	zed.FlagCount = 1
	e.createUsers(
		newUser("alice", "Alice Smith"),
		newUser("bob", "Robert"),
		newUser("carol", "alpha centauri"),
		dave,
		newUser("ALBERT", "Mr. A"),
		newUser("al_x", "x"),
		newUser("a%b", "Percent"),
		zed,
		newUser("sofia", "Σοφίας"),
		newUser("kel", "Kelvin"),
	)
	return []string{"ALBERT", "a%b", "al_x", "alice", "bob", "carol", "dave", "kel", "sofia", "zed"}
}

func testUserQueryFilters(t *testing.T, e *env) {
	all := queryUsers(e)
	cases := []struct {
		name string
		f    chat.UserFilter
		want []string
	}{
		{"all, by userId", chat.UserFilter{}, all},
		{"search prefix of id or name", chat.UserFilter{Search: chat.SearchKey("al")}, []string{"ALBERT", "al_x", "alice", "carol"}},
		{"search is case-insensitive", chat.UserFilter{Search: chat.SearchKey("AL")}, []string{"ALBERT", "al_x", "alice", "carol"}},
		{"search matches displayName", chat.UserFilter{Search: chat.SearchKey("rob")}, []string{"bob"}},
		{"search matches a later word of the name", chat.UserFilter{Search: chat.SearchKey("smith")}, []string{"alice"}},
		{"search runs across words", chat.UserFilter{Search: chat.SearchKey("alpha C")}, []string{"carol"}},
		{"search runs across words from a later word", chat.UserFilter{Search: chat.SearchKey("CENTAURI")}, []string{"carol"}},
		{"search word prefix after punctuation", chat.UserFilter{Search: chat.SearchKey("a")}, []string{"ALBERT", "a%b", "al_x", "alice", "carol"}},
		{"search across words needs the separator", chat.UserFilter{Search: chat.SearchKey("alphac")}, nil},
		{"search Unicode folding", chat.UserFilter{Search: chat.SearchKey("ΣΟΦ")}, []string{"sofia"}},
		{"search Unicode folding, final sigma", chat.UserFilter{Search: chat.SearchKey("σοφίας")}, []string{"sofia"}},
		{"search Kelvin sign", chat.UserFilter{Search: chat.SearchKey("KEL")}, []string{"kel"}},
		{"search is not infix", chat.UserFilter{Search: chat.SearchKey("lic")}, nil},
		{"search underscore is literal", chat.UserFilter{Search: chat.SearchKey("al_")}, []string{"al_x"}},
		{"search percent is literal", chat.UserFilter{Search: chat.SearchKey("a%")}, []string{"a%b"}},
		{"search whole id", chat.UserFilter{Search: chat.SearchKey("dave")}, []string{"dave"}},
		{"search longer than any", chat.UserFilter{Search: chat.SearchKey("davey")}, nil},
		{"flagged", chat.UserFilter{Flagged: true}, []string{"dave", "zed"}},
		{"flagged and search", chat.UserFilter{Flagged: true, Search: chat.SearchKey("D")}, []string{"dave"}},
		{"flagged and search none", chat.UserFilter{Flagged: true, Search: chat.SearchKey("al")}, nil},
		{"limit", chat.UserFilter{Limit: 3}, all[:3]},
		{"search limit", chat.UserFilter{Search: chat.SearchKey("al"), Limit: 2}, []string{"ALBERT", "al_x"}},
		{"search after", chat.UserFilter{Search: chat.SearchKey("al"), After: &chat.UserCursor{UserID: "al_x"}}, []string{"alice", "carol"}},
		{"search before", chat.UserFilter{Search: chat.SearchKey("al"), Before: &chat.UserCursor{UserID: "carol"}, Limit: 2}, []string{"alice", "al_x"}},
		{"flagged after", chat.UserFilter{Flagged: true, After: &chat.UserCursor{UserID: "dave"}}, []string{"zed"}},
	}
	e.view(func(tx chat.Tx) error {
		for _, c := range cases {
			got, err := tx.QueryUsers(e.ctx, c.f)
			require.NoError(t, err, c.name)
			require.Equal(t, c.want, nilIfEmpty(userIDs(got)), c.name)
		}
		return nil
	})
}

func testUserQueryPaging(t *testing.T, e *env) {
	all := queryUsers(e)
	e.view(func(tx chat.Tx) error {
		got, err := tx.QueryUsers(e.ctx, chat.UserFilter{After: &chat.UserCursor{UserID: "alice"}, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{"bob", "carol"}, userIDs(got))
		got, err = tx.QueryUsers(e.ctx, chat.UserFilter{Before: &chat.UserCursor{UserID: "carol"}})
		require.NoError(t, err)
		require.Equal(t, []string{"bob", "alice", "al_x", "a%b", "ALBERT"}, userIDs(got), "Before: descending")
		got, err = tx.QueryUsers(e.ctx, chat.UserFilter{Before: &chat.UserCursor{UserID: "carol"}, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{"bob", "alice"}, userIDs(got))
		// A cursor need not be an existing user.
		got, err = tx.QueryUsers(e.ctx, chat.UserFilter{After: &chat.UserCursor{UserID: "b"}, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []string{"bob"}, userIDs(got))

		var fwd []string
		var cur *chat.UserCursor
		for pages := 0; ; pages++ {
			boundPages(t, pages)
			page, err := tx.QueryUsers(e.ctx, chat.UserFilter{After: cur, Limit: 3})
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			fwd = append(fwd, userIDs(page)...)
			cur = &chat.UserCursor{UserID: page[len(page)-1].UserID}
		}
		require.Equal(t, all, fwd)

		bwd := []string{all[len(all)-1]}
		cur = &chat.UserCursor{UserID: all[len(all)-1]}
		for pages := 0; ; pages++ {
			boundPages(t, pages)
			page, err := tx.QueryUsers(e.ctx, chat.UserFilter{Before: cur, Limit: 3})
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			bwd = append(bwd, userIDs(page)...)
			cur = &chat.UserCursor{UserID: page[len(page)-1].UserID}
		}
		require.Equal(t, reversed(all), bwd)
		return nil
	})
}

// Users are inserted between existing ids while a reader pages: no row that
// existed at the start is skipped, none is repeated, order holds.
func testUserPagingConcurrent(t *testing.T, e *env) {
	const n = 30
	var start []string
	for i := 0; i < n; i++ {
		start = append(start, fmt.Sprintf("u%03d", 2*i))
	}
	e.update(func(tx chat.Tx) error {
		for _, id := range start {
			if err := tx.CreateUser(e.ctx, newUser(id, id)); err != nil {
				return err
			}
		}
		return nil
	})
	var wg sync.WaitGroup
	var insertErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("u%03d", 2*i+1)
			if err := e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.CreateUser(e.ctx, newUser(id, id)) }); err != nil {
				insertErr = err
				return
			}
		}
	}()
	var fwd []string
	var cur *chat.UserCursor
	for pages := 0; ; pages++ {
		boundPages(t, pages)
		page := read(e, func(tx chat.Tx) ([]*chat.User, error) {
			return tx.QueryUsers(e.ctx, chat.UserFilter{After: cur, Limit: 4})
		})
		if len(page) == 0 {
			break
		}
		fwd = append(fwd, userIDs(page)...)
		cur = &chat.UserCursor{UserID: page[len(page)-1].UserID}
	}
	seenOnce(t, start, fwd, "paging with After")
	require.True(t, slices.IsSorted(fwd))
	var bwd []string
	cur = &chat.UserCursor{UserID: "v"}
	for pages := 0; ; pages++ {
		boundPages(t, pages)
		page := read(e, func(tx chat.Tx) ([]*chat.User, error) {
			return tx.QueryUsers(e.ctx, chat.UserFilter{Before: cur, Limit: 4})
		})
		if len(page) == 0 {
			break
		}
		bwd = append(bwd, userIDs(page)...)
		cur = &chat.UserCursor{UserID: page[len(page)-1].UserID}
	}
	seenOnce(t, start, bwd, "paging with Before")
	require.True(t, slices.IsSorted(reversed(bwd)))
	wg.Wait()
	require.NoError(t, insertErr)
}

func testUserIsolation(t *testing.T, e *env) {
	u := fullUser()
	e.createUsers(u)
	u.Roles[0] = "changed"
	u.Metadata["age"] = 1.0
	u.Metadata["tags"].([]any)[0] = "changed"
	u.Metadata["o"].(map[string]any)["k"] = "changed"
	u.Hashflag.Hash[0] = 99
	want := cUser(t, fullUser())
	require.Equal(t, want, cUser(t, e.user("user-1")))
	for _, got := range []*chat.User{
		e.user("user-1"),
		read(e, func(tx chat.Tx) ([]*chat.User, error) { return tx.GetUsers(e.ctx, []string{"user-1"}) })[0],
		read(e, func(tx chat.Tx) ([]*chat.User, error) { return tx.QueryUsers(e.ctx, chat.UserFilter{}) })[0],
		write(e, func(tx chat.Tx) ([]*chat.User, error) { return tx.EnsureUsers(e.ctx, []string{"user-1"}, base) })[0],
	} {
		got.Roles[0] = "changed"
		got.Metadata["age"] = 1.0
		got.Metadata["tags"].([]any)[0] = "changed"
		got.Metadata["o"].(map[string]any)["k"] = "changed"
		got.Hashflag.Hash[0] = 99
		require.Equal(t, want, cUser(t, e.user("user-1")))
	}
	upd := fullUser()
	e.update(func(tx chat.Tx) error { return tx.UpdateUser(e.ctx, upd) })
	upd.Roles[1] = "changed"
	upd.Metadata["age"] = 2.0
	require.Equal(t, want, cUser(t, e.user("user-1")))
}

// ---- roles ----

func testRoles(t *testing.T, e *env) {
	put := func(r *chat.Role) { t.Helper(); e.update(func(tx chat.Tx) error { return tx.PutRole(e.ctx, r) }) }
	put(&chat.Role{RoleID: "moderator", Permissions: []string{"a", "b"}, CreatedAt: at(1), UpdatedAt: at(1)})
	put(&chat.Role{RoleID: "Global-Admin", Permissions: []string{chat.PermExemptFromBlacklist}, CreatedAt: at(2), UpdatedAt: at(2)})
	put(&chat.Role{RoleID: "a_b", CreatedAt: at(3), UpdatedAt: at(3)})
	put(&chat.Role{RoleID: "ADMOD", Permissions: []string{"x"}, CreatedAt: at(4), UpdatedAt: at(4)})

	// Replace: permissions replaced, createdAt kept.
	put(&chat.Role{RoleID: "moderator", Permissions: []string{"c"}, CreatedAt: at(50), UpdatedAt: at(60)})
	got := read(e, func(tx chat.Tx) ([]*chat.Role, error) { return tx.GetRoles(e.ctx, []string{"moderator", "missing"}) })
	require.Len(t, got, 1)
	require.Equal(t, cRole(t, &chat.Role{RoleID: "moderator", Permissions: []string{"c"}, CreatedAt: at(1), UpdatedAt: at(60)}), cRole(t, got[0]))

	got = read(e, func(tx chat.Tx) ([]*chat.Role, error) { return tx.GetRoles(e.ctx, []string{"a_b", "ADMOD"}) })
	ids := []string{}
	for _, r := range got {
		ids = append(ids, r.RoleID)
	}
	require.ElementsMatch(t, []string{"a_b", "ADMOD"}, ids)

	list := func(filter string) []string {
		t.Helper()
		rs := read(e, func(tx chat.Tx) ([]*chat.Role, error) { return tx.ListRoles(e.ctx, filter) })
		var out []string
		for _, r := range rs {
			out = append(out, r.RoleID)
		}
		return out
	}
	require.Equal(t, []string{"ADMOD", "Global-Admin", "a_b", "moderator"}, list(""), "ordered by id")
	require.Equal(t, []string{"ADMOD", "moderator"}, list("MOD"), "contains, case-insensitive")
	require.Equal(t, []string{"ADMOD", "Global-Admin"}, list("adm"))
	require.Equal(t, []string{"a_b"}, list("_"), "underscore is literal")
	require.Nil(t, list("%"), "percent is literal")
	require.Nil(t, list("zzz"))
	all := read(e, func(tx chat.Tx) ([]*chat.Role, error) { return tx.ListRoles(e.ctx, "") })
	require.Equal(t, cRole(t, &chat.Role{RoleID: "ADMOD", Permissions: []string{"x"}, CreatedAt: at(4), UpdatedAt: at(4)}), cRole(t, all[0]))
}

func testRoleIsolation(t *testing.T, e *env) {
	r := &chat.Role{RoleID: "r", Permissions: []string{"a", "b"}, CreatedAt: at(1), UpdatedAt: at(1)}
	e.update(func(tx chat.Tx) error { return tx.PutRole(e.ctx, r) })
	r.Permissions[0] = "changed"
	got := read(e, func(tx chat.Tx) ([]*chat.Role, error) { return tx.GetRoles(e.ctx, []string{"r"}) })[0]
	require.Equal(t, []string{"a", "b"}, got.Permissions)
	got.Permissions[1] = "changed"
	got = read(e, func(tx chat.Tx) ([]*chat.Role, error) { return tx.ListRoles(e.ctx, "") })[0]
	require.Equal(t, []string{"a", "b"}, got.Permissions)
}
