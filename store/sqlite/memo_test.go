package sqlite

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat"
)

// direct reads the lookups memoKeyed serves, by the same statements run
// every time (keyed), for comparison.
func direct(t *testing.T, ctx context.Context, tx *tx) (u *chat.User, c *chat.Channel, cu *chat.ChannelUser, r *chat.Role) {
	t.Helper()
	us, err := keyed(tx, ctx, scanUser, "SELECT "+userCols+" FROM users u WHERE u.user_id = ?", "u1")
	require.NoError(t, err)
	cs, err := keyed(tx, ctx, scanChannel, "SELECT "+channelCols+" FROM channels c WHERE c.channel_id = ?", "c1")
	require.NoError(t, err)
	cus, err := keyed(tx, ctx, scanChannelUser, "SELECT "+channelUserSel+" FROM channel_users WHERE channel_id = ? AND user_id = ?", "c1", "u1")
	require.NoError(t, err)
	rs, err := keyed(tx, ctx, scanRole, "SELECT role_id, permissions, created_at, updated_at FROM roles WHERE role_id = ?", "r1")
	require.NoError(t, err)
	if len(us) > 0 {
		u = us[0]
	}
	if len(cs) > 0 {
		c = cs[0]
	}
	if len(cus) > 0 {
		cu = cus[0]
	}
	if len(rs) > 0 {
		r = rs[0]
	}
	return u, c, cu, r
}

// remembered reads the same rows through the store's lookups (memoKeyed).
func remembered(t *testing.T, ctx context.Context, tx *tx) (u *chat.User, c *chat.Channel, cu *chat.ChannelUser, r *chat.Role) {
	t.Helper()
	u, err := tx.GetUser(ctx, "u1")
	if chat.ErrorCode(err) != chat.CodeNotFound {
		require.NoError(t, err)
	}
	c, err = tx.GetChannel(ctx, "c1")
	if chat.ErrorCode(err) != chat.CodeNotFound {
		require.NoError(t, err)
	}
	cu, err = tx.GetChannelUser(ctx, "c1", "u1")
	if chat.ErrorCode(err) != chat.CodeNotFound {
		require.NoError(t, err)
	}
	rs, err := tx.GetRoles(ctx, []string{"r1"})
	require.NoError(t, err)
	if len(rs) > 0 {
		r = rs[0]
	}
	return u, c, cu, r
}

// Every lookup a write transaction remembers answers what the database
// holds, after each kind of write to its table and after a DELETE; a
// write to another table keeps what the lookup remembered; each caller
// gets values of its own.
func TestWriteTxLookupsAnswerAsTheDatabase(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	now := t0
	require.NoError(t, s.Update(ctx, func(ctx2 chat.Tx) error {
		tx := ctx2.(*tx)
		same := func(step string) {
			t.Helper()
			// Twice: the second read is served from what the first left.
			for range 2 {
				u, c, cu, r := remembered(t, ctx, tx)
				du, dc, dcu, dr := direct(t, ctx, tx)
				require.Equal(t, du, u, step)
				require.Equal(t, dc, c, step)
				require.Equal(t, dcu, cu, step)
				require.Equal(t, dr, r, step)
			}
		}
		same("empty")
		require.NoError(t, tx.CreateChannel(ctx, testChannel("c1")))
		same("channel created")
		_, err := tx.EnsureUsers(ctx, []string{"u1"}, now)
		require.NoError(t, err)
		same("user created")
		require.NoError(t, tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: "c1", UserID: "u1",
			Membership: chat.MembershipMember, CreatedAt: chat.NewTime(now), UpdatedAt: chat.NewTime(now)}))
		same("member added")
		require.NoError(t, tx.PutRole(ctx, &chat.Role{RoleID: "r1", Permissions: []string{"a"}, CreatedAt: chat.NewTime(now), UpdatedAt: chat.NewTime(now)}))
		same("role created")

		// A write to another table keeps the remembered rows.
		require.Contains(t, tx.s.memo, memoKey{q: "SELECT " + userCols + " FROM users u WHERE u.user_id = ?", a0: "u1"})
		_, err = postMessage(ctx, tx, "c1", "m1", "hello")
		require.NoError(t, err)
		require.Contains(t, tx.s.memo, memoKey{q: "SELECT " + userCols + " FROM users u WHERE u.user_id = ?", a0: "u1"},
			"a post's writes name no users table")
		same("message posted (channel counters)")
		// The post's update of the channel's counters left the channel
		// remembered as changed (NextSegment), not forgotten.
		require.Contains(t, tx.s.memo, memoKey{q: channelByID, a0: "c1"})
		next, err := tx.NextSegment(ctx, "c1", now.Add(time.Minute))
		require.NoError(t, err)
		require.Contains(t, tx.s.memo, memoKey{q: channelByID, a0: "c1"})
		_, dc, _, _ := direct(t, ctx, tx)
		require.Equal(t, dc, next)
		same("a later segment")

		u, err := tx.GetUser(ctx, "u1")
		require.NoError(t, err)
		u.DisplayName, u.Metadata = "Renamed", map[string]any{"k": "v"}
		require.NoError(t, tx.UpdateUser(ctx, u))
		same("user updated")
		// A caller's changes to a returned value stay its own.
		u.Metadata["k"] = "changed"
		got, err := tx.GetUser(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, map[string]any{"k": "v"}, got.Metadata)

		require.NoError(t, tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: "c1", UserID: "u1",
			Membership: chat.MembershipBanned, CreatedAt: chat.NewTime(now), UpdatedAt: chat.NewTime(now)}))
		same("member banned")
		require.NoError(t, tx.PutRole(ctx, &chat.Role{RoleID: "r1", Permissions: []string{"a", "b"}, CreatedAt: chat.NewTime(now), UpdatedAt: chat.NewTime(now)}))
		same("role updated")
		c, err := tx.GetChannel(ctx, "c1")
		require.NoError(t, err)
		c.DisplayName, c.IsMuted = "Other", true
		require.NoError(t, tx.UpdateChannel(ctx, c))
		same("channel updated")
		require.NoError(t, tx.DeleteChannelUser(ctx, "c1", "u1"))
		require.Empty(t, tx.s.memo, "a DELETE forgets every table's rows")
		same("member deleted")
		return nil
	}))

	// A read transaction remembers nothing; a write transaction starts
	// with nothing remembered.
	s.wlock.Lock()
	before := len(s.memo)
	s.wlock.Unlock()
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		_, err := tx.GetUser(ctx, "u1")
		return err
	}))
	s.wlock.Lock()
	after := len(s.memo)
	s.wlock.Unlock()
	require.Equal(t, before, after)
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		require.Empty(t, s.memo)
		return nil
	}))
}

// A member of a commit group whose savepoint is rolled back leaves nothing
// remembered: the next member reads the rows as the database has them.
func TestWriteTxLookupsForgetRolledBackMembers(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		_, err := tx.EnsureUsers(ctx, []string{"u1"}, t0)
		return err
	}))
	const n = 40
	errBoom := errors.New("boom")
	var wg sync.WaitGroup
	results := make([]error, n)
	require.NoError(t, s.Update(ctx, func(chat.Tx) error {
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = s.Update(ctx, func(tx chat.Tx) error {
					u, err := tx.GetUser(ctx, "u1")
					if err != nil {
						return err
					}
					if u.DisplayName != "u1" {
						return fmt.Errorf("member %d read %q, written by a rolled-back member", i, u.DisplayName)
					}
					u.DisplayName = fmt.Sprintf("by %d", i)
					if err := tx.UpdateUser(ctx, u); err != nil {
						return err
					}
					if u, err = tx.GetUser(ctx, "u1"); err != nil { // remembered again, as written
						return err
					}
					if u.DisplayName != fmt.Sprintf("by %d", i) {
						return fmt.Errorf("member %d read back %q", i, u.DisplayName)
					}
					return errBoom
				})
			}()
		}
		// Hold the write connection until several wait: they run as one
		// group, each in a savepoint.
		deadline := time.Now().Add(10 * time.Second)
		for len(s.reqs) < n/2 && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		return nil
	}))
	wg.Wait()
	for _, err := range results {
		require.ErrorIs(t, err, errBoom)
	}
}

// The positions NextSegment changes in a remembered channel row are those
// of the columns it updates.
func TestNextSegmentColumns(t *testing.T) {
	cols := strings.Split(channelCols, ",")
	for i, c := range cols {
		cols[i] = strings.TrimSpace(c)
	}
	require.Equal(t, "c.last_activity", cols[channelColLastActivity])
	require.Equal(t, "c.updated_at", cols[channelColUpdatedAt])
	require.Equal(t, "c.message_count", cols[channelColMessageCount])
}

// What a write statement may change, read from its text: the remembered
// tables it names (channel_users also matches users: both are
// forgotten), or all of them for a statement that may cascade or change
// the schema.
func TestWritesOf(t *testing.T) {
	for q, want := range map[string]uint8{
		"UPDATE channels SET message_count = message_count + 1 WHERE channel_id = ?": memoChannels,
		"INSERT INTO channel_users (channel_id, user_id) VALUES (?,?)":               memoChannelUsers | memoUsers,
		"UPDATE users SET roles = ? WHERE user_id = ?":                               memoUsers | memoRoles,
		"INSERT INTO roles (role_id, permissions) VALUES (?,?)":                      memoRoles,
		"INSERT INTO messages (message_id, data) VALUES (?,?)":                       0,
		"DELETE FROM flags WHERE kind = ?":                                           memoAll,
		"INSERT OR REPLACE INTO meta (key, value) VALUES (?,?)":                      memoAll,
		"PRAGMA optimize": memoAll,
	} {
		require.Equal(t, want, writesOf(q), q)
	}
	// Each text is read once; the cache stays bounded.
	s := &Store{memo: map[memoKey]memoEntry{{q: "x"}: {tables: memoUsers}}}
	for i := range memoWritesMax + 10 {
		s.forgetReads(fmt.Sprintf("INSERT INTO messages (message_id) VALUES (%d)", i))
	}
	require.Len(t, s.memoWrites, memoWritesMax)
	require.Len(t, s.memo, 1, "no statement named users")
	s.forgetReads("UPDATE users SET display_name = ?")
	require.Empty(t, s.memo)
}
