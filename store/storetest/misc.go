package storetest

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var ruleCases = []tcase{
	{"PutList", testRulesPutList},
	{"Delete", testRulesDelete},
	{"Rename", testRulesRename},
	{"Version", testRulesVersion},
}

var flagCases = []tcase{
	{"AddClear", testFlags},
}

var adminCases = []tcase{
	{"CreateGetList", testAdmins},
	{"Revoke", testAdminRevoke},
	{"Rotate", testAdminRotate},
	{"Isolation", testAdminIsolation},
}

var blobCases = []tcase{
	{"RoundTrip", testBlobRoundTrip},
	{"DeleteBlobs", testDeleteBlobs},
	{"DeleteChannelBlobs", testDeleteChannelBlobs},
}

var metaCases = []tcase{
	{"PutIfAbsent", testMeta},
}

// ---- rules ----

func rule(list chat.RuleList, id string, exact bool, ms int64) *chat.Rule {
	return &chat.Rule{List: list, RuleID: id, IsMatchExactWord: exact, CreatedAt: at(ms), UpdatedAt: at(ms)}
}

func (e *env) putRules(rs ...*chat.Rule) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error {
		for _, r := range rs {
			if err := tx.PutRule(e.ctx, r); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *env) rules(list chat.RuleList, ids []string) []*chat.Rule {
	e.t.Helper()
	return read(e, func(tx chat.Tx) ([]*chat.Rule, error) { return tx.ListRules(e.ctx, list, ids) })
}

func ruleIDs(rs []*chat.Rule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.RuleID)
	}
	return out
}

func testRulesPutList(t *testing.T, e *env) {
	e.putRules(
		rule(chat.Blacklist, "spam", true, 1),
		rule(chat.Blacklist, "Bad.*word", false, 2),
		rule(chat.Blacklist, "eggs", false, 3),
		rule(chat.Whitelist, "example.com", false, 4),
	)
	bl := e.rules(chat.Blacklist, nil)
	require.Equal(t, []string{"Bad.*word", "eggs", "spam"}, ruleIDs(bl), "ordered by id")
	require.Equal(t, cRule(t, rule(chat.Blacklist, "spam", true, 1)), cRule(t, bl[2]))
	wl := e.rules(chat.Whitelist, nil)
	require.Equal(t, []string{"example.com"}, ruleIDs(wl), "lists are separate")
	require.Equal(t, cRule(t, rule(chat.Whitelist, "example.com", false, 4)), cRule(t, wl[0]))
	require.Equal(t, []string{"eggs", "spam"}, ruleIDs(e.rules(chat.Blacklist, []string{"spam", "missing", "eggs"})), "only those ids")
	require.Empty(t, e.rules(chat.Blacklist, []string{"example.com"}))

	// Replace: createdAt kept.
	e.putRules(&chat.Rule{List: chat.Blacklist, RuleID: "spam", IsMatchExactWord: false, CreatedAt: at(100), UpdatedAt: at(200)})
	got := e.rules(chat.Blacklist, []string{"spam"})
	require.Len(t, got, 1)
	require.Equal(t, cRule(t, &chat.Rule{List: chat.Blacklist, RuleID: "spam", CreatedAt: at(1), UpdatedAt: at(200)}), cRule(t, got[0]))
	// The same id in the other list is another rule.
	e.putRules(rule(chat.Whitelist, "spam", false, 9))
	require.Len(t, e.rules(chat.Blacklist, nil), 3)
	require.Equal(t, []string{"example.com", "spam"}, ruleIDs(e.rules(chat.Whitelist, nil)))
}

func testRulesDelete(t *testing.T, e *env) {
	e.putRules(rule(chat.Blacklist, "a", false, 1), rule(chat.Blacklist, "b", false, 1), rule(chat.Whitelist, "a", false, 1))
	n := write(e, func(tx chat.Tx) (int, error) { return tx.DeleteRules(e.ctx, chat.Blacklist, []string{"a", "missing"}) })
	require.Equal(t, 1, n, "how many existed")
	require.Equal(t, []string{"b"}, ruleIDs(e.rules(chat.Blacklist, nil)))
	require.Equal(t, []string{"a"}, ruleIDs(e.rules(chat.Whitelist, nil)), "the other list is untouched")
	n = write(e, func(tx chat.Tx) (int, error) { return tx.DeleteRules(e.ctx, chat.Blacklist, []string{"a"}) })
	require.Zero(t, n)
	n = write(e, func(tx chat.Tx) (int, error) { return tx.DeleteRules(e.ctx, chat.Whitelist, []string{"a", "b"}) })
	require.Equal(t, 1, n)
	require.Empty(t, e.rules(chat.Whitelist, nil))
}

func testRulesRename(t *testing.T, e *env) {
	e.putRules(rule(chat.Blacklist, "old", false, 1), rule(chat.Blacklist, "taken", false, 2), rule(chat.Whitelist, "free", false, 3))
	rename := func(list chat.RuleList, oldID, newID string, exact bool) error {
		return e.s.Update(e.ctx, func(tx chat.Tx) error {
			return tx.RenameRule(e.ctx, list, oldID, &chat.Rule{List: list, RuleID: newID, IsMatchExactWord: exact, CreatedAt: at(50), UpdatedAt: at(60)})
		})
	}
	requireNotFound(t, rename(chat.Blacklist, "missing", "x", false), "rename of an absent rule")
	requireNotFound(t, rename(chat.Whitelist, "old", "x", false), "rename in the wrong list")
	requireConflict(t, rename(chat.Blacklist, "old", "taken", false), "rename to an existing id")
	require.Equal(t, []string{"old", "taken"}, ruleIDs(e.rules(chat.Blacklist, nil)), "a failed rename changes nothing")

	require.NoError(t, rename(chat.Blacklist, "old", "new", true))
	bl := e.rules(chat.Blacklist, nil)
	require.Equal(t, []string{"new", "taken"}, ruleIDs(bl))
	require.True(t, bl[0].IsMatchExactWord)
	require.True(t, at(1).Equal(bl[0].CreatedAt.Time), "createdAt kept")
	require.Equal(t, chat.Blacklist, bl[0].List)

	require.NoError(t, rename(chat.Blacklist, "new", "new", false), "same id: only isMatchExactWord changes")
	bl = e.rules(chat.Blacklist, []string{"new"})
	require.Len(t, bl, 1)
	require.False(t, bl[0].IsMatchExactWord)

	require.NoError(t, rename(chat.Whitelist, "free", "taken", false), "the id is taken only in the other list")
	require.Equal(t, []string{"taken"}, ruleIDs(e.rules(chat.Whitelist, nil)))
}

func testRulesVersion(t *testing.T, e *env) {
	version := func() int64 {
		t.Helper()
		return read(e, func(tx chat.Tx) (int64, error) { return tx.RulesVersion(e.ctx) })
	}
	seen := map[int64]string{}
	v := version()
	seen[v] = "start"
	require.Equal(t, v, version(), "stable without writes")
	step := func(name string, fn func(tx chat.Tx) error) {
		t.Helper()
		e.update(fn)
		nv := version()
		require.NotEqual(t, v, nv, "RulesVersion must change after %s", name)
		v = nv
	}
	step("PutRule", func(tx chat.Tx) error { return tx.PutRule(e.ctx, rule(chat.Blacklist, "a", false, 1)) })
	step("PutRule replace", func(tx chat.Tx) error { return tx.PutRule(e.ctx, rule(chat.Blacklist, "a", true, 2)) })
	step("PutRule whitelist", func(tx chat.Tx) error { return tx.PutRule(e.ctx, rule(chat.Whitelist, "w", false, 1)) })
	step("RenameRule", func(tx chat.Tx) error {
		return tx.RenameRule(e.ctx, chat.Blacklist, "a", rule(chat.Blacklist, "b", false, 3))
	})
	step("DeleteRules", func(tx chat.Tx) error { _, err := tx.DeleteRules(e.ctx, chat.Blacklist, []string{"b"}); return err })
	step("DeleteRules whitelist", func(tx chat.Tx) error { _, err := tx.DeleteRules(e.ctx, chat.Whitelist, []string{"w"}); return err })
	step("PutRule again", func(tx chat.Tx) error { return tx.PutRule(e.ctx, rule(chat.Blacklist, "a", false, 1)) })
}

// ---- flags ----

func testFlags(t *testing.T, e *env) {
	add := func(kind, target, user string) bool {
		t.Helper()
		return write(e, func(tx chat.Tx) (bool, error) { return tx.AddFlag(e.ctx, kind, target, user, base) })
	}
	clearFlags := func(kind, target string) {
		t.Helper()
		e.update(func(tx chat.Tx) error { return tx.ClearFlags(e.ctx, kind, target) })
	}
	require.True(t, add(chat.FlagTargetMessage, "m1", "u1"))
	require.False(t, add(chat.FlagTargetMessage, "m1", "u1"), "one flag per flagger")
	require.True(t, add(chat.FlagTargetMessage, "m1", "u2"))
	require.True(t, add(chat.FlagTargetMessage, "m2", "u1"), "per target")
	require.True(t, add(chat.FlagTargetUser, "m1", "u1"), "per kind")
	// Within one transaction too.
	twice := write(e, func(tx chat.Tx) ([2]bool, error) {
		a, err := tx.AddFlag(e.ctx, chat.FlagTargetUser, "x", "u1", base)
		if err != nil {
			return [2]bool{}, err
		}
		b, err := tx.AddFlag(e.ctx, chat.FlagTargetUser, "x", "u1", base)
		return [2]bool{a, b}, err
	})
	require.Equal(t, [2]bool{true, false}, twice)

	clearFlags(chat.FlagTargetMessage, "m1")
	require.True(t, add(chat.FlagTargetMessage, "m1", "u1"), "cleared")
	require.True(t, add(chat.FlagTargetMessage, "m1", "u2"), "cleared")
	require.False(t, add(chat.FlagTargetMessage, "m2", "u1"), "other targets keep their flags")
	require.False(t, add(chat.FlagTargetUser, "m1", "u1"), "other kinds keep their flags")
	clearFlags(chat.FlagTargetMessage, "never-flagged")
}

// ---- admins ----

func admin(name string, hash string, ms int64) *chat.Admin {
	return &chat.Admin{Name: name, UserID: "admin-" + name, TokenHash: []byte(hash), CreatedAt: at(ms)}
}

func testAdmins(t *testing.T, e *env) {
	create := func(a *chat.Admin) error {
		return e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.CreateAdmin(e.ctx, a) })
	}
	require.NoError(t, create(admin("ops", "\x00hash-ops\xff", 1)))
	require.NoError(t, create(admin("zeta", "hash-zeta", 2)))
	require.NoError(t, create(admin("alpha", "hash-alpha", 3)))
	requireConflict(t, create(admin("ops", "hash-other", 4)), "duplicate admin name")

	got := read(e, func(tx chat.Tx) (*chat.Admin, error) {
		return tx.GetAdminByTokenHash(e.ctx, []byte("\x00hash-ops\xff"))
	})
	require.Equal(t, cAdmin(t, admin("ops", "\x00hash-ops\xff", 1)), cAdmin(t, got))
	require.Nil(t, got.RevokedAt)
	_, err := readErr(e, func(tx chat.Tx) (*chat.Admin, error) { return tx.GetAdminByTokenHash(e.ctx, []byte("hash-unknown")) })
	requireNotFound(t, err, "unknown token hash")
	_, err = readErr(e, func(tx chat.Tx) (*chat.Admin, error) { return tx.GetAdminByTokenHash(e.ctx, []byte("hash-other")) })
	requireNotFound(t, err, "the hash of a rejected admin")

	list := read(e, func(tx chat.Tx) ([]*chat.Admin, error) { return tx.ListAdmins(e.ctx) })
	var names []string
	for _, a := range list {
		names = append(names, a.Name)
	}
	require.Equal(t, []string{"alpha", "ops", "zeta"}, names, "ordered by name")
	require.Equal(t, cAdmin(t, admin("alpha", "hash-alpha", 3)), cAdmin(t, list[0]))
}

func testAdminRevoke(t *testing.T, e *env) {
	e.update(func(tx chat.Tx) error { return tx.CreateAdmin(e.ctx, admin("ops", "h", 1)) })
	e.update(func(tx chat.Tx) error { return tx.RevokeAdmin(e.ctx, "ops", at(10).Time) })
	got := read(e, func(tx chat.Tx) (*chat.Admin, error) { return tx.GetAdminByTokenHash(e.ctx, []byte("h")) })
	require.NotNil(t, got.RevokedAt, "revoked admins are returned too")
	require.True(t, at(10).Equal(got.RevokedAt.Time))
	e.update(func(tx chat.Tx) error { return tx.RevokeAdmin(e.ctx, "ops", at(20).Time) })
	got = read(e, func(tx chat.Tx) (*chat.Admin, error) { return tx.GetAdminByTokenHash(e.ctx, []byte("h")) })
	require.True(t, at(10).Equal(got.RevokedAt.Time), "revokedAt kept when already set")
	list := read(e, func(tx chat.Tx) ([]*chat.Admin, error) { return tx.ListAdmins(e.ctx) })
	require.Len(t, list, 1)
	require.NotNil(t, list[0].RevokedAt)
	err := e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.RevokeAdmin(e.ctx, "missing", base) })
	requireNotFound(t, err, "RevokeAdmin")
}

func testAdminRotate(t *testing.T, e *env) {
	e.update(func(tx chat.Tx) error { return tx.CreateAdmin(e.ctx, admin("ops", "old", 1)) })
	e.update(func(tx chat.Tx) error { return tx.CreateAdmin(e.ctx, admin("other", "taken", 2)) })
	e.update(func(tx chat.Tx) error { return tx.RevokeAdmin(e.ctx, "ops", at(10).Time) })
	e.update(func(tx chat.Tx) error { return tx.RotateAdmin(e.ctx, "ops", []byte("new")) })
	_, err := readErr(e, func(tx chat.Tx) (*chat.Admin, error) { return tx.GetAdminByTokenHash(e.ctx, []byte("old")) })
	requireNotFound(t, err, "the old hash after a rotation")
	got := read(e, func(tx chat.Tx) (*chat.Admin, error) { return tx.GetAdminByTokenHash(e.ctx, []byte("new")) })
	require.Equal(t, "ops", got.Name)
	require.Nil(t, got.RevokedAt, "rotating revives a revoked admin")
	require.True(t, at(1).Equal(got.CreatedAt.Time), "createdAt kept")

	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.RotateAdmin(e.ctx, "ops", []byte("taken")) })
	require.Equal(t, chat.CodeConflict, chat.ErrorCode(err), "a hash another admin holds: %v", err)
	got = read(e, func(tx chat.Tx) (*chat.Admin, error) { return tx.GetAdminByTokenHash(e.ctx, []byte("new")) })
	require.Equal(t, "ops", got.Name, "a refused rotation changes nothing")
	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.RotateAdmin(e.ctx, "missing", []byte("x")) })
	requireNotFound(t, err, "RotateAdmin")
}

func testAdminIsolation(t *testing.T, e *env) {
	a := admin("ops", "hash", 1)
	e.update(func(tx chat.Tx) error { return tx.CreateAdmin(e.ctx, a) })
	a.TokenHash[0] = 'X'
	got := read(e, func(tx chat.Tx) (*chat.Admin, error) { return tx.GetAdminByTokenHash(e.ctx, []byte("hash")) })
	require.Equal(t, []byte("hash"), got.TokenHash)
	got.TokenHash[0] = 'Y'
	list := read(e, func(tx chat.Tx) ([]*chat.Admin, error) { return tx.ListAdmins(e.ctx) })
	require.Equal(t, []byte("hash"), list[0].TokenHash)
}

// ---- blobs ----

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func (e *env) blob(messageID, name string) (*chat.Blob, error) {
	return readErr(e, func(tx chat.Tx) (*chat.Blob, error) { return tx.GetBlob(e.ctx, messageID, name) })
}

func (e *env) putBlobs(bs ...*chat.Blob) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error {
		for _, b := range bs {
			if err := tx.PutBlob(e.ctx, b); err != nil {
				return err
			}
		}
		return nil
	})
}

func requireBlob(t *testing.T, want, got *chat.Blob) {
	t.Helper()
	require.NotNil(t, got)
	require.Equal(t, want.MessageID, got.MessageID)
	require.Equal(t, want.ChannelID, got.ChannelID)
	require.Equal(t, want.Name, got.Name)
	require.Equal(t, want.ContentType, got.ContentType)
	require.Equal(t, len(want.Data), len(got.Data), "blob length")
	require.True(t, bytes.Equal(want.Data, got.Data), "blob bytes differ")
	require.Equal(t, ct(t, want.CreatedAt), ct(t, got.CreatedAt))
}

func testBlobRoundTrip(t *testing.T, e *env) {
	big := &chat.Blob{MessageID: "m1", ChannelID: "c", Name: "full", ContentType: "image/png", Data: randomBytes(1<<20, 1), CreatedAt: at(1)}
	empty := &chat.Blob{MessageID: "m1", ChannelID: "c", Name: "file", ContentType: "application/octet-stream", Data: []byte{}, CreatedAt: at(2)}
	binary := &chat.Blob{MessageID: "m2", ChannelID: "c", Name: "small", ContentType: "image/jpeg", Data: []byte{0, 0xff, 0, '\n', '\r', 0x80, 0}, CreatedAt: at(3)}
	bigCopy := *big
	bigCopy.Data = bytes.Clone(big.Data)
	e.putBlobs(big, empty, binary)
	big.Data[0] ^= 0xff // mutating what was passed does not reach the store
	for _, want := range []*chat.Blob{&bigCopy, empty, binary} {
		got, err := e.blob(want.MessageID, want.Name)
		require.NoError(t, err)
		requireBlob(t, want, got)
	}
	got, err := e.blob("m1", "full")
	require.NoError(t, err)
	got.Data[1] ^= 0xff // nor does mutating what was returned
	got, err = e.blob("m1", "full")
	require.NoError(t, err)
	requireBlob(t, &bigCopy, got)

	// Replace by (messageId, name).
	repl := &chat.Blob{MessageID: "m1", ChannelID: "c", Name: "file", ContentType: "text/plain", Data: []byte("replaced"), CreatedAt: at(9)}
	e.putBlobs(repl)
	got, err = e.blob("m1", "file")
	require.NoError(t, err)
	requireBlob(t, repl, got)

	_, err = e.blob("m1", "medium")
	requireNotFound(t, err, "unknown name")
	_, err = e.blob("missing", "full")
	requireNotFound(t, err, "unknown message")
}

func testDeleteBlobs(t *testing.T, e *env) {
	e.putBlobs(
		&chat.Blob{MessageID: "m1", ChannelID: "c", Name: "small", Data: []byte("1"), CreatedAt: at(1)},
		&chat.Blob{MessageID: "m1", ChannelID: "c", Name: "large", Data: []byte("2"), CreatedAt: at(1)},
		&chat.Blob{MessageID: "m2", ChannelID: "c", Name: "small", Data: []byte("3"), CreatedAt: at(1)},
	)
	e.update(func(tx chat.Tx) error { return tx.DeleteBlobs(e.ctx, "m1") })
	_, err := e.blob("m1", "small")
	requireNotFound(t, err)
	_, err = e.blob("m1", "large")
	requireNotFound(t, err)
	got, err := e.blob("m2", "small")
	require.NoError(t, err)
	require.Equal(t, []byte("3"), got.Data)
	e.update(func(tx chat.Tx) error { return tx.DeleteBlobs(e.ctx, "m1") })    // idempotent
	e.update(func(tx chat.Tx) error { return tx.DeleteBlobs(e.ctx, "never") }) // absent
	e.putBlobs(&chat.Blob{MessageID: "m1", ChannelID: "c", Name: "small", Data: []byte("4"), CreatedAt: at(2)})
	got, err = e.blob("m1", "small")
	require.NoError(t, err)
	require.Equal(t, []byte("4"), got.Data)
}

func testDeleteChannelBlobs(t *testing.T, e *env) {
	e.putBlobs(
		&chat.Blob{MessageID: "m1", ChannelID: "c", Name: "small", Data: []byte("1"), CreatedAt: at(1)},
		&chat.Blob{MessageID: "m1", ChannelID: "c", Name: "large", Data: []byte("2"), CreatedAt: at(1)},
		&chat.Blob{MessageID: "m2", ChannelID: "c", Name: "file", Data: []byte("3"), CreatedAt: at(1)},
		&chat.Blob{MessageID: "m3", ChannelID: "d", Name: "file", Data: []byte("4"), CreatedAt: at(1)},
	)
	e.update(func(tx chat.Tx) error { return tx.DeleteChannelBlobs(e.ctx, "c") })
	for _, k := range [][2]string{{"m1", "small"}, {"m1", "large"}, {"m2", "file"}} {
		_, err := e.blob(k[0], k[1])
		requireNotFound(t, err, k[0]+"/"+k[1])
	}
	got, err := e.blob("m3", "file")
	require.NoError(t, err, "other channels keep their blobs")
	require.Equal(t, []byte("4"), got.Data)
	e.update(func(tx chat.Tx) error { return tx.DeleteChannelBlobs(e.ctx, "c") })
	e.update(func(tx chat.Tx) error { return tx.DeleteChannelBlobs(e.ctx, "never") })
}

// ---- meta ----

func testMeta(t *testing.T, e *env) {
	_, err := readErr(e, func(tx chat.Tx) (string, error) { return tx.GetMeta(e.ctx, "k") })
	requireNotFound(t, err, "GetMeta")
	v := write(e, func(tx chat.Tx) (string, error) { return tx.PutMetaIfAbsent(e.ctx, "k", "first") })
	require.Equal(t, "first", v)
	v = write(e, func(tx chat.Tx) (string, error) { return tx.PutMetaIfAbsent(e.ctx, "k", "second") })
	require.Equal(t, "first", v, "the first value stays")
	v = read(e, func(tx chat.Tx) (string, error) { return tx.GetMeta(e.ctx, "k") })
	require.Equal(t, "first", v)
	v = write(e, func(tx chat.Tx) (string, error) { return tx.PutMetaIfAbsent(e.ctx, "other", "") })
	require.Equal(t, "", v)
	v = write(e, func(tx chat.Tx) (string, error) { return tx.PutMetaIfAbsent(e.ctx, "other", "x") })
	require.Equal(t, "", v, "an empty value is a value")
	// Concurrent first writers agree on one value.
	vals := make([]string, 6)
	require.NoError(t, group(len(vals), func(i int) error {
		return e.s.Update(e.ctx, func(tx chat.Tx) error {
			v, err := tx.PutMetaIfAbsent(e.ctx, "race", string(rune('a'+i)))
			vals[i] = v
			return err
		})
	}))
	for _, v := range vals {
		require.Equal(t, vals[0], v, "every writer sees the stored value")
	}
	require.Equal(t, vals[0], read(e, func(tx chat.Tx) (string, error) { return tx.GetMeta(e.ctx, "race") }))
}
