package chat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/stretchr/testify/require"
)

// clock is an injectable clock for tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type env struct {
	t     *testing.T
	ctx   context.Context
	svc   *chat.Service
	store chat.Store
	clk   *clock
	admin string // the admin's user id
}

func newEnv(t *testing.T) *env {
	return newEnvStore(t, memory.New())
}

func newEnvStore(t *testing.T, st chat.Store) *env {
	t.Helper()
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)}
	svc, err := chat.New(ctx, st, chat.Config{Now: clk.Now})
	require.NoError(t, err)
	a, tok, err := svc.CreateAdmin(ctx, "", "root", "")
	require.NoError(t, err)
	require.NotEmpty(t, tok)
	return &env{t: t, ctx: ctx, svc: svc, store: st, clk: clk, admin: a.UserID}
}

func (e *env) channel(id string, members ...string) {
	e.t.Helper()
	_, err := e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: id, Type: "standard", UserIDs: members})
	require.NoError(e.t, err)
}

func (e *env) post(actor, channel, text string) (*chat.Message, error) {
	out, err := e.svc.CreateMessage(e.ctx, actor, chat.CreateMessageInput{ChannelID: channel, Type: "text", Data: map[string]any{"text": text}})
	if err != nil {
		return nil, err
	}
	return &out.Messages[0], nil
}

func (e *env) mustPost(actor, channel, text string) *chat.Message {
	e.t.Helper()
	m, err := e.post(actor, channel, text)
	require.NoError(e.t, err)
	return m
}

// requireBlobGone checks that a message's blob is gone from the Service and
// from the store.
func (e *env) requireBlobGone(messageID, name string) {
	e.t.Helper()
	_, _, err := e.svc.GetMessageBlob(e.ctx, e.admin, messageID, name)
	requireCode(e.t, err, chat.CodeNotFound)
	err = e.store.View(e.ctx, func(tx chat.Tx) error {
		_, err := tx.GetBlob(e.ctx, messageID, name)
		return err
	})
	requireCode(e.t, err, chat.CodeNotFound)
}

func requireCode(t *testing.T, err error, code chat.Code) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, chat.ErrorCode(err), "error: %v", err)
}

func TestErrorsIs(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", chat.Errorf(chat.CodeNotFound, "channel x not found"))
	require.True(t, errors.Is(err, chat.ErrNotFound))
	require.False(t, errors.Is(err, chat.ErrConflict))
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
	require.Equal(t, chat.CodeInternal, chat.ErrorCode(errors.New("x")))
}

func TestTimeJSON(t *testing.T) {
	tm := chat.NewTime(time.Date(2018, 11, 30, 11, 39, 20, 149_999_999, time.FixedZone("x", 3600)))
	b, err := json.Marshal(tm)
	require.NoError(t, err)
	require.Equal(t, `"2018-11-30T10:39:20.149Z"`, string(b))
	b, _ = json.Marshal(chat.NewTime(time.Date(2018, 11, 30, 11, 39, 20, 0, time.UTC)))
	require.Equal(t, `"2018-11-30T11:39:20.000Z"`, string(b))
	var back chat.Time
	require.NoError(t, json.Unmarshal(b, &back))
	require.True(t, back.Equal(time.Date(2018, 11, 30, 11, 39, 20, 0, time.UTC)))
}

// TestTimeJSONMatchesLayout checks the fast formatting of chat.Time
// against TimeLayout over a spread of instants, zones and years, the
// edges of four-digit years included.
func TestTimeJSONMatchesLayout(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("east", 5*3600+1800), time.FixedZone("west", -11*3600)}
	instants := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 5_000_000, time.UTC),
		time.Date(-1, 6, 1, 12, 0, 0, 0, time.UTC),
		chat.Forever.Time,
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		instants = append(instants, time.Unix(r.Int64N(5e9)-1e9, r.Int64N(1e9)))
	}
	for _, tm := range instants {
		for _, z := range zones {
			ct := chat.NewTime(tm.In(z))
			want := `"` + ct.UTC().Format(chat.TimeLayout) + `"`
			require.Equal(t, want, string(ct.AppendJSON(nil)), tm.String())
			b, err := json.Marshal(ct)
			require.NoError(t, err)
			require.Equal(t, want, string(b))
		}
	}
}

func TestChannelCreateAndConflict(t *testing.T) {
	e := newEnv(t)
	out, err := e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: "general", Type: "standard",
		Tags: []string{"a", "b"}, UserIDs: []string{"alice", "bob"}, Metadata: map[string]any{"k": "v"}})
	require.NoError(t, err)
	require.Len(t, out.Channels, 1)
	c := out.Channels[0]
	require.Equal(t, "general", c.DisplayName)
	require.Equal(t, 2, c.MemberCount)
	require.Len(t, out.ChannelUsers, 2)
	require.Len(t, out.Users, 2)
	require.Equal(t, "alice", out.Users[0].DisplayName, "users are created on first reference")

	_, err = e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: "general", Type: "standard"})
	requireCode(t, err, chat.CodeConflict)
	_, err = e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: "x", Type: "private"})
	requireCode(t, err, chat.CodeBadRequest)
	require.Contains(t, err.Error(), "type")
	_, err = e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: "", Type: "standard"})
	requireCode(t, err, chat.CodeBadRequest)
	_, err = e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: "bad\x00id", Type: "standard"})
	requireCode(t, err, chat.CodeBadRequest)
	_, err = e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: strings.Repeat("x", 257), Type: "standard"})
	requireCode(t, err, chat.CodeBadRequest)

	// A rejected request changes nothing: the channel with a banned member
	// is not created.
	require.NoError(t, e.svc.GlobalBan(e.ctx, e.admin, "alice", false))
	_, err = e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: "nope", Type: "standard", UserIDs: []string{"alice"}})
	requireCode(t, err, chat.CodeGlobalBanned)
	_, err = e.svc.GetChannel(e.ctx, e.admin, "nope")
	requireCode(t, err, chat.CodeNotFound)
}

func TestMuteExpiresByTimeAlone(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice", "bob")
	e.mustPost("alice", "c", "hello")

	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "c", time.Second))
	_, err := e.post("alice", "c", "muted?")
	requireCode(t, err, chat.CodeChannelMuted)
	ch, err := e.svc.GetChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	require.True(t, ch.Channels[0].IsMuted)
	require.NotNil(t, ch.Channels[0].MuteTimeout)
	// Admins broadcast to muted channels.
	e.mustPost(e.admin, "c", "announcement")

	e.clk.Add(999 * time.Millisecond)
	_, err = e.post("alice", "c", "still muted")
	requireCode(t, err, chat.CodeChannelMuted)
	e.clk.Add(2 * time.Millisecond)
	e.mustPost("alice", "c", "free again")
	ch, _ = e.svc.GetChannel(e.ctx, e.admin, "c")
	require.False(t, ch.Channels[0].IsMuted)
	require.Nil(t, ch.Channels[0].MuteTimeout)

	// Member mute.
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "c", []string{"bob"}, 500*time.Millisecond))
	_, err = e.post("bob", "c", "hi")
	requireCode(t, err, chat.CodeUserMuted)
	e.mustPost("alice", "c", "alice is not muted")
	e.clk.Add(501 * time.Millisecond)
	e.mustPost("bob", "c", "bob is back")

	// Forever, and unmute with 0.
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "c", []string{"bob"}, chat.MuteForever))
	e.clk.Add(100 * 365 * 24 * time.Hour)
	_, err = e.post("bob", "c", "hi")
	requireCode(t, err, chat.CodeUserMuted)
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "c", []string{"bob"}, chat.Unmute))
	e.mustPost("bob", "c", "unmuted")

	// Invalid periods and non-members.
	requireCode(t, e.svc.MuteChannel(e.ctx, e.admin, "c", -2*time.Millisecond), chat.CodeBadRequest)
	err = e.svc.MuteUsers(e.ctx, e.admin, "c", []string{"bob", "zed"}, 100*time.Millisecond)
	requireCode(t, err, chat.CodeBadRequest)
	require.Contains(t, err.Error(), "zed")
	var fe chat.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, chat.FieldError{Field: "userIds", UserIDs: []string{"zed"}}, fe)
	_, err = e.post("bob", "c", "a failed mute changed nothing")
	require.NoError(t, err)

	// Exemption by role permission.
	_, err = e.svc.PutRoles(e.ctx, e.admin, []string{"vip"}, []string{chat.PermExemptFromMute})
	require.NoError(t, err)
	_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "bob", Roles: &[]string{"vip"}})
	require.NoError(t, err)
	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "c", chat.MuteForever))
	e.mustPost("bob", "c", "vip talks")
	_, err = e.post("alice", "c", "alice cannot")
	requireCode(t, err, chat.CodeChannelMuted)
}

func TestNonMemberCannotPost(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice")
	_, err := e.post("mallory", "c", "hi")
	requireCode(t, err, chat.CodePermissionDenied)
	// Admins may post to any open channel, member or not.
	e.mustPost(e.admin, "c", "broadcast")
}

func TestBanBlocksReAddAndDeletesMessages(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice", "bob")
	m1 := e.mustPost("alice", "c", "one")
	e.mustPost("alice", "c", "two")
	mb := e.mustPost("bob", "c", "bob's")

	require.NoError(t, e.svc.BanUsers(e.ctx, e.admin, "c", []string{"alice", "carol"}))
	require.NoError(t, e.svc.BanUsers(e.ctx, e.admin, "c", []string{"alice"}), "idempotent")

	got, err := e.svc.GetMessage(e.ctx, e.admin, m1.MessageID)
	require.NoError(t, err)
	require.True(t, got.Messages[0].IsDeleted)
	require.Empty(t, got.Messages[0].Data)
	got, _ = e.svc.GetMessage(e.ctx, e.admin, mb.MessageID)
	require.False(t, got.Messages[0].IsDeleted)

	ch, _ := e.svc.GetChannel(e.ctx, e.admin, "c")
	require.Equal(t, 1, ch.Channels[0].MemberCount)

	_, err = e.post("alice", "c", "back?")
	requireCode(t, err, chat.CodeUserBanned)
	_, err = e.svc.AddUsers(e.ctx, e.admin, "c", []string{"dave", "alice"})
	requireCode(t, err, chat.CodeUserBanned)
	ch, _ = e.svc.GetChannel(e.ctx, e.admin, "c")
	require.Equal(t, 1, ch.Channels[0].MemberCount, "the whole request was rejected: dave was not added")
	_, err = e.svc.JoinChannel(e.ctx, "carol", "c")
	requireCode(t, err, chat.CodeUserBanned)

	// Removing does not clear a ban.
	require.NoError(t, e.svc.RemoveUsers(e.ctx, e.admin, "c", []string{"alice"}))
	_, err = e.svc.AddUsers(e.ctx, e.admin, "c", []string{"alice"})
	requireCode(t, err, chat.CodeUserBanned)

	require.NoError(t, e.svc.UnbanUsers(e.ctx, e.admin, "c", []string{"alice"}))
	require.NoError(t, e.svc.UnbanUsers(e.ctx, e.admin, "c", []string{"alice"}))
	out, err := e.svc.AddUsers(e.ctx, e.admin, "c", []string{"alice"})
	require.NoError(t, err)
	require.Equal(t, 2, out.Channels[0].MemberCount)
	e.mustPost("alice", "c", "I'm back")
	// Deleted messages stay deleted.
	got, _ = e.svc.GetMessage(e.ctx, e.admin, m1.MessageID)
	require.True(t, got.Messages[0].IsDeleted)
}

func TestGlobalBan(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice")
	m := e.mustPost("alice", "c", "hi")
	require.NoError(t, e.svc.GlobalBan(e.ctx, e.admin, "alice", false))
	u, err := e.svc.GetUser(e.ctx, e.admin, "alice")
	require.NoError(t, err)
	require.True(t, u.Users[0].IsGlobalBan)
	_, err = e.post("alice", "c", "again")
	requireCode(t, err, chat.CodeGlobalBanned)
	e.channel("d")
	_, err = e.svc.AddUsers(e.ctx, e.admin, "d", []string{"alice"})
	requireCode(t, err, chat.CodeGlobalBanned)
	got, _ := e.svc.GetMessage(e.ctx, e.admin, m.MessageID)
	require.False(t, got.Messages[0].IsDeleted, "messages stay unless deleteMessages")
	require.NoError(t, e.svc.GlobalBan(e.ctx, e.admin, "alice", true))
	got, _ = e.svc.GetMessage(e.ctx, e.admin, m.MessageID)
	require.True(t, got.Messages[0].IsDeleted)
	require.NoError(t, e.svc.GlobalUnban(e.ctx, e.admin, "alice"))
	_, err = e.svc.AddUsers(e.ctx, e.admin, "d", []string{"alice"})
	require.NoError(t, err)
	requireCode(t, e.svc.GlobalBan(e.ctx, e.admin, "nobody", false), chat.CodeNotFound)
	requireCode(t, e.svc.GlobalBan(e.ctx, e.admin, e.admin, false), chat.CodePermissionDenied)
}

// failingStore wraps a store and fails DeleteChannelBlobs, to prove that
// closing a channel is one transaction.
type failingStore struct{ chat.Store }

type failingTx struct{ chat.Tx }

func (f failingStore) Update(ctx context.Context, fn func(chat.Tx) error) error {
	return f.Store.Update(ctx, func(tx chat.Tx) error { return fn(failingTx{tx}) })
}

func (failingTx) DeleteChannelBlobs(context.Context, string) error {
	return errors.New("disk on fire")
}

func TestCloseIsAtomicAndFinal(t *testing.T) {
	st := memory.New()
	e := newEnvStore(t, st)
	e.channel("c", "alice", "bob")
	m := e.mustPost("alice", "c", "hello")
	fm, err := e.svc.CreateFileMessage(e.ctx, "bob", chat.CreateFileMessageInput{ChannelID: "c", FileName: "a.txt", MimeType: "text/plain", Data: []byte("abc")})
	require.NoError(t, err)
	require.NoError(t, e.svc.BanUsers(e.ctx, e.admin, "c", []string{"eve"}))

	// A failure in the middle of close leaves everything as it was.
	bad, err := chat.New(e.ctx, failingStore{st}, chat.Config{Now: e.clk.Now})
	require.NoError(t, err)
	err = bad.CloseChannel(e.ctx, e.admin, "c")
	require.Error(t, err)
	ch, _ := e.svc.GetChannel(e.ctx, e.admin, "c")
	require.False(t, ch.Channels[0].IsClosed)
	require.Equal(t, 2, ch.Channels[0].MemberCount)
	got, _ := e.svc.GetMessage(e.ctx, e.admin, m.MessageID)
	require.False(t, got.Messages[0].IsDeleted)
	b, _, err := e.svc.GetMessageBlob(e.ctx, e.admin, fm.Messages[0].MessageID, "file")
	require.NoError(t, err)
	require.Equal(t, "abc", string(b.Data))

	require.NoError(t, e.svc.CloseChannel(e.ctx, e.admin, "c"))
	require.NoError(t, e.svc.CloseChannel(e.ctx, e.admin, "c"), "closing again is a no-op")
	ch, err = e.svc.GetChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	require.True(t, ch.Channels[0].IsClosed)
	require.Equal(t, 0, ch.Channels[0].MemberCount)
	require.Empty(t, ch.ChannelUsers)
	got, _ = e.svc.GetMessage(e.ctx, e.admin, m.MessageID)
	require.True(t, got.Messages[0].IsDeleted)
	e.requireBlobGone(fm.Messages[0].MessageID, "file")

	_, err = e.post(e.admin, "c", "hello?")
	requireCode(t, err, chat.CodeForbidden)
	_, err = e.svc.AddUsers(e.ctx, e.admin, "c", []string{"alice"})
	requireCode(t, err, chat.CodeForbidden)
	requireCode(t, e.svc.MuteChannel(e.ctx, e.admin, "c", 10*time.Millisecond), chat.CodeForbidden)
	_, err = e.svc.RenameChannel(e.ctx, e.admin, "c", "x")
	requireCode(t, err, chat.CodeForbidden)
	_, err = e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: "c", Type: "standard"})
	requireCode(t, err, chat.CodeConflict)

	q, err := e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{})
	require.NoError(t, err)
	require.Empty(t, q.Channels, "closed channels are hidden by default")
	q, err = e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{IncludeClosed: true})
	require.NoError(t, err)
	require.Len(t, q.Channels, 1)
}

func TestChannelSegmentConcurrent(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	const workers, each = 8, 500
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := e.post(e.admin, "c", "x"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	seen := map[int64]bool{}
	var tok string
	for {
		out, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", First: 100, After: ptr(int64(0)), Token: tok})
		require.NoError(t, err)
		for _, m := range out.Messages {
			require.False(t, seen[m.ChannelSegment], "segment %d repeated", m.ChannelSegment)
			seen[m.ChannelSegment] = true
		}
		if out.Paging.Next == "" {
			break
		}
		tok = out.Paging.Next
	}
	require.Len(t, seen, workers*each)
	for i := int64(1); i <= workers*each; i++ {
		require.True(t, seen[i], "segment %d missing", i)
	}
	ch, _ := e.svc.GetChannel(e.ctx, e.admin, "c")
	require.Equal(t, int64(workers*each), ch.Channels[0].MessageCount)
}

func ptr[T any](v T) *T { return &v }

func TestMessageQueryWindows(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	for i := 1; i <= 30; i++ {
		e.mustPost(e.admin, "c", fmt.Sprintf("m%d", i))
	}
	segs := func(out *chat.MessageList) []int64 {
		var s []int64
		for _, m := range out.Messages {
			s = append(s, m.ChannelSegment)
		}
		return s
	}
	out, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c"})
	require.NoError(t, err)
	require.Len(t, out.Messages, 20)
	require.Equal(t, int64(11), out.Messages[0].ChannelSegment, "nothing = newest 20, ascending")
	require.Empty(t, out.Paging.Next)
	require.NotEmpty(t, out.Paging.Previous)

	out, _ = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", First: 3})
	require.Equal(t, []int64{1, 2, 3}, segs(out))
	require.Empty(t, out.Paging.Previous)
	out, _ = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", Last: 3})
	require.Equal(t, []int64{28, 29, 30}, segs(out))
	out, _ = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", After: ptr(int64(10)), First: 2})
	require.Equal(t, []int64{11, 12}, segs(out))
	out, _ = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", Before: ptr(int64(10)), Last: 2})
	require.Equal(t, []int64{8, 9}, segs(out))
	prev, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", Token: out.Paging.Previous})
	require.NoError(t, err)
	require.Equal(t, []int64{6, 7}, segs(prev))
	next, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", Token: out.Paging.Next})
	require.NoError(t, err)
	require.Equal(t, []int64{10, 11}, segs(next))

	// Paging backwards from the newest page visits every message once.
	seen := map[int64]int{}
	page, _ := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", Last: 7})
	for {
		for _, s := range segs(page) {
			seen[s]++
		}
		if page.Paging.Previous == "" {
			break
		}
		page, err = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", Token: page.Paging.Previous})
		require.NoError(t, err)
	}
	require.Len(t, seen, 30)
	for _, n := range seen {
		require.Equal(t, 1, n)
	}
}

func TestPagingTokensCannotBeForgedOrReused(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	e.channel("d")
	for i := 0; i < 5; i++ {
		e.mustPost(e.admin, "c", "x")
		e.mustPost(e.admin, "d", "y")
	}
	out, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", First: 2})
	require.NoError(t, err)
	tok := out.Paging.Next
	require.NotEmpty(t, tok)

	_, err = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "d", Token: tok})
	requireCode(t, err, chat.CodeBadRequest)
	_, err = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", Tags: []string{"t"}, Token: tok})
	requireCode(t, err, chat.CodeBadRequest)
	// Flip one character of the payload.
	b := []byte(tok)
	if b[3] == 'A' {
		b[3] = 'B'
	} else {
		b[3] = 'A'
	}
	_, err = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", Token: string(b)})
	requireCode(t, err, chat.CodeBadRequest)
	for _, bad := range []string{"x", ".", "a.b", strings.Repeat("A", 2000), tok + "x"} {
		_, err = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", Token: bad})
		requireCode(t, err, chat.CodeBadRequest)
	}
	// A token of another listing kind is refused.
	_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "someone"})
	require.NoError(t, err)
	us, err := e.svc.QueryUsers(e.ctx, e.admin, chat.UserQuery{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, us.Paging.Next)
	_, err = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", Token: us.Paging.Next})
	requireCode(t, err, chat.CodeBadRequest)
	// Another service with another key refuses it too.
	other, err := chat.New(e.ctx, memory.New(), chat.Config{PagingKey: []byte("other key")})
	require.NoError(t, err)
	_, err = other.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", Token: tok})
	requireCode(t, err, chat.CodeBadRequest)
}

func TestCommentsAndChildrenNumber(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	e.channel("d")
	p := e.mustPost(e.admin, "c", "parent")
	for i := 0; i < 3; i++ {
		_, err := e.svc.CreateMessage(e.ctx, e.admin, chat.CreateMessageInput{ChannelID: "c", Type: "text", Data: map[string]any{"text": "c"}, ParentID: p.MessageID})
		require.NoError(t, err)
	}
	got, _ := e.svc.GetMessage(e.ctx, e.admin, p.MessageID)
	require.Equal(t, 3, got.Messages[0].ChildrenNumber)
	cs, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", ParentID: p.MessageID})
	require.NoError(t, err)
	require.Len(t, cs.Messages, 3)
	for _, m := range cs.Messages {
		require.Equal(t, p.MessageID, m.ParentID)
	}
	top, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", FilterByParentID: true})
	require.NoError(t, err)
	require.Len(t, top.Messages, 1)
	b, _ := json.Marshal(top.Messages[0])
	require.NotContains(t, string(b), "parentId", "parentId only on comments")

	_, err = e.svc.CreateMessage(e.ctx, e.admin, chat.CreateMessageInput{ChannelID: "d", Type: "text", Data: map[string]any{"text": "c"}, ParentID: p.MessageID})
	requireCode(t, err, chat.CodeBadRequest)
	require.NoError(t, e.svc.DeleteMessage(e.ctx, e.admin, p.MessageID))
	require.NoError(t, e.svc.DeleteMessage(e.ctx, e.admin, p.MessageID), "idempotent")
	_, err = e.svc.CreateMessage(e.ctx, e.admin, chat.CreateMessageInput{ChannelID: "c", Type: "text", Data: map[string]any{"text": "c"}, ParentID: p.MessageID})
	requireCode(t, err, chat.CodeBadRequest)

	all, _ := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c"})
	require.Len(t, all.Messages, 3, "deleted messages are left out")
	all, _ = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", IncludeDeleted: true})
	require.Len(t, all.Messages, 4)
	require.True(t, all.Messages[0].IsDeleted)
	require.Equal(t, int64(1), all.Messages[0].ChannelSegment, "segment kept")
}

func TestMessageValidation(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	cases := []chat.CreateMessageInput{
		{ChannelID: "c", Type: "text", Data: map[string]any{}},
		{ChannelID: "c", Type: "text", Data: map[string]any{"text": 5}},
		{ChannelID: "c", Type: "text", Data: map[string]any{"text": ""}},
		{ChannelID: "c", Type: "text", Data: map[string]any{"text": strings.Repeat("é", 20001)}},
		{ChannelID: "c", Type: "video", Data: map[string]any{"text": "x"}},
		{ChannelID: "c", Type: "custom"},
		{ChannelID: "c", Type: "custom", Data: map[string]any{"blob": strings.Repeat("x", 100<<10)}},
		{ChannelID: "c", Type: "text", Data: map[string]any{"text": "x"}, Tags: make([]string, 51)},
	}
	for i, in := range cases {
		_, err := e.svc.CreateMessage(e.ctx, e.admin, in)
		requireCode(t, err, chat.CodeBadRequest)
		_ = i
	}
	_, err := e.svc.CreateMessage(e.ctx, e.admin, chat.CreateMessageInput{ChannelID: "nope", Type: "text", Data: map[string]any{"text": "x"}})
	requireCode(t, err, chat.CodeNotFound)
	ch, _ := e.svc.GetChannel(e.ctx, e.admin, "c")
	require.Equal(t, int64(0), ch.Channels[0].MessageCount, "rejected messages take no segment")
	out, err := e.svc.CreateMessage(e.ctx, e.admin, chat.CreateMessageInput{ChannelID: "c", Type: "custom", Data: map[string]any{"card": map[string]any{"title": "T", "n": 2.0}}})
	require.NoError(t, err)
	require.Equal(t, "T", out.Messages[0].Data["card"].(map[string]any)["title"])
}

func TestBlacklistWholeWordUnicode(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	_, err := e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"bad", "дурак", "straße"}, true)
	require.NoError(t, err)
	_, err = e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"spam", `b[a@]d+ie`}, false)
	require.NoError(t, err)
	blocked := []string{"bad", "this is BAD!", "très bad.", "bad_thing", "(bad)", "ты дурак.", "Дурак", "die Straße", "spammer", "antispam", "what a b@ddie", "BADDIE"}
	allowed := []string{"badge", "ébad", "badé", "дураки", "straßen", "bád", "b a d", "good"}
	for _, s := range blocked {
		_, err := e.post(e.admin, "c", s)
		requireCode(t, err, chat.CodeBlacklisted)
		var ce *chat.Error
		require.True(t, errors.As(err, &ce))
		require.NotEmpty(t, ce.Detail, s)
	}
	for _, s := range allowed {
		_, err := e.post(e.admin, "c", s)
		require.NoError(t, err, s)
	}
	// A whole-word regex whose leftmost candidate is inside a word still
	// finds the later whole-word alternative.
	e.channel("r")
	_, err = e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{`gr[e3]at|gr[e3]atness`, `\bxyz\d`}, true)
	require.NoError(t, err)
	_, err = e.post(e.admin, "r", "such GREATNESS")
	requireCode(t, err, chat.CodeBlacklisted)
	_, err = e.post(e.admin, "r", "greatnesses")
	require.NoError(t, err)
	_, err = e.post(e.admin, "r", "code XYZ9 here")
	requireCode(t, err, chat.CodeBlacklisted)
	require.NoError(t, e.svc.DeleteRules(e.ctx, e.admin, chat.Blacklist, []string{`gr[e3]at|gr[e3]atness`, `\bxyz\d`}))

	// Custom data string values are checked too, at any depth.
	_, err = e.svc.CreateMessage(e.ctx, e.admin, chat.CreateMessageInput{ChannelID: "c", Type: "custom", Data: map[string]any{"a": []any{map[string]any{"b": "so bad"}}}})
	requireCode(t, err, chat.CodeBlacklisted)

	// isMatchExactWord=false matches inside words.
	_, err = e.svc.UpdateRule(e.ctx, e.admin, chat.Blacklist, "bad", "bad", false)
	require.NoError(t, err)
	_, err = e.post(e.admin, "c", "badge")
	requireCode(t, err, chat.CodeBlacklisted)

	// Invalid regex: 400001, nothing stored.
	_, err = e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"fine", "(unclosed"}, false)
	requireCode(t, err, chat.CodeInvalidRegex)
	require.Contains(t, err.Error(), "(unclosed")
	rs, err := e.svc.QueryRules(e.ctx, e.admin, chat.Blacklist, []string{"fine"})
	require.NoError(t, err)
	require.Empty(t, rs.Records)

	// The exemption permission.
	_, err = e.svc.PutRoles(e.ctx, e.admin, []string{"mod"}, []string{chat.PermExemptFromBlacklist})
	require.NoError(t, err)
	e.channel("m", "mo")
	_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "mo", Roles: &[]string{"mod"}})
	require.NoError(t, err)
	e.mustPost("mo", "m", "bad words allowed")
	_, err = e.post(e.admin, "m", "admins are not exempt: bad")
	requireCode(t, err, chat.CodeBlacklisted)

	// Delete and query.
	require.NoError(t, e.svc.DeleteRules(e.ctx, e.admin, chat.Blacklist, []string{"bad", "missing"}))
	e.mustPost(e.admin, "c", "bad is fine now")
	all, err := e.svc.QueryRules(e.ctx, e.admin, chat.Blacklist, nil)
	require.NoError(t, err)
	var ids []string
	for _, r := range all.Records {
		ids = append(ids, r.RuleID)
	}
	require.Equal(t, []string{"b[a@]d+ie", "spam", "straße", "дурак"}, ids)
}

func TestWhitelistContractExamples(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	e.mustPost(e.admin, "c", "links are free with an empty whitelist: https://evil.io")
	check := func(allowed, refused []string) {
		t.Helper()
		for _, s := range allowed {
			_, err := e.post(e.admin, "c", s)
			require.NoError(t, err, s)
		}
		for _, s := range refused {
			_, err := e.post(e.admin, "c", s)
			require.Error(t, err, s)
			requireCode(t, err, chat.CodeLinkNotAllowed)
			var ce *chat.Error
			require.True(t, errors.As(err, &ce))
			require.NotEmpty(t, ce.Detail)
		}
	}
	// Each entry of the contract on its own.
	_, err := e.svc.AddRules(e.ctx, e.admin, chat.Whitelist, []string{"https://docs.example.com/pub"}, false)
	require.NoError(t, err)
	check([]string{"https://docs.example.com/pub/a", "https://docs.example.com/pub", "no links here. Just text"},
		[]string{"https://docs.example.com/private", "https://docs.example.com/public", "https://example.com"})
	require.NoError(t, e.svc.DeleteRules(e.ctx, e.admin, chat.Whitelist, []string{"https://docs.example.com/pub"}))

	_, err = e.svc.AddRules(e.ctx, e.admin, chat.Whitelist, []string{"example.com", `.*\.gov`}, false)
	require.NoError(t, err)
	check([]string{
		"see https://example.com", "http://example.com/x?y", "example.com/a", "https://sub.example.com/",
		"visit www.whitehouse.gov today", "no links here. Just text", "version 1.2 is out", "e.g. this",
		"mail me at bob@evil.io",
	}, []string{
		"https://example.com.evil.io", "https://notexample.com", "go to evil.io now", "http://gov.evil.io/x",
		"ok example.com but not evil.io",
	})
	// Rename: 400400 when absent, 400900 when the new id exists.
	_, err = e.svc.UpdateRule(e.ctx, e.admin, chat.Whitelist, "missing.com", "x.com", false)
	requireCode(t, err, chat.CodeNotFound)
	_, err = e.svc.UpdateRule(e.ctx, e.admin, chat.Whitelist, "example.com", `.*\.gov`, false)
	requireCode(t, err, chat.CodeConflict)
	_, err = e.svc.UpdateRule(e.ctx, e.admin, chat.Whitelist, "example.com", "example.org", false)
	require.NoError(t, err)
	_, err = e.post(e.admin, "c", "https://example.com")
	requireCode(t, err, chat.CodeLinkNotAllowed)
	e.mustPost(e.admin, "c", "https://example.org/ok")
	// Exemption.
	_, err = e.svc.PutRoles(e.ctx, e.admin, []string{"linker"}, []string{chat.PermExemptFromWhitelist})
	require.NoError(t, err)
	e.channel("l", "lin")
	_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "lin", Roles: &[]string{"linker"}})
	require.NoError(t, err)
	e.mustPost("lin", "l", "https://anything.io")
}

func TestUsersUpdateQueryFlags(t *testing.T) {
	e := newEnv(t)
	_, err := e.svc.PutRoles(e.ctx, e.admin, []string{"editor"}, []string{"Message/Edit"})
	require.NoError(t, err)
	name := "Zoë"
	out, err := e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "zoe", DisplayName: &name, Roles: &[]string{"editor"}, Metadata: &map[string]any{"a": 1.0}})
	require.NoError(t, err)
	require.Equal(t, "Zoë", out.Users[0].DisplayName)
	// Partial: absent fields stay.
	out, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "zoe", Metadata: &map[string]any{"b": 2.0}})
	require.NoError(t, err)
	require.Equal(t, "Zoë", out.Users[0].DisplayName)
	require.Equal(t, []string{"editor"}, out.Users[0].Roles)
	require.Equal(t, map[string]any{"b": 2.0}, out.Users[0].Metadata)
	_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "zoe", Roles: &[]string{"nope"}})
	requireCode(t, err, chat.CodeBadRequest)
	require.Contains(t, err.Error(), "nope")
	_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "zoe", Roles: &[]string{chat.RoleGlobalAdmin}})
	requireCode(t, err, chat.CodePermissionDenied)

	for _, id := range []string{"zed", "zack", "amy"} {
		_, err := e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: id})
		require.NoError(t, err)
	}
	q, err := e.svc.QueryUsers(e.ctx, e.admin, chat.UserQuery{Search: "Z"})
	require.NoError(t, err)
	var ids []string
	for _, u := range q.Users {
		ids = append(ids, u.UserID)
	}
	require.Equal(t, []string{"zack", "zed", "zoe"}, ids)

	// Paging with limit 2 over every user visits each once, both ways.
	var fwd []string
	tok := ""
	for {
		p, err := e.svc.QueryUsers(e.ctx, e.admin, chat.UserQuery{Limit: 2, PageToken: tok})
		require.NoError(t, err)
		for _, u := range p.Users {
			fwd = append(fwd, u.UserID)
		}
		if p.Paging.Next == "" {
			back, err := e.svc.QueryUsers(e.ctx, e.admin, chat.UserQuery{Limit: 2, PageToken: p.Paging.Previous})
			if p.Paging.Previous != "" {
				require.NoError(t, err)
				require.NotEmpty(t, back.Users)
			}
			break
		}
		tok = p.Paging.Next
	}
	require.True(t, sort.StringsAreSorted(fwd))
	require.Len(t, fwd, 5) // root, amy, zack, zed, zoe

	// Flags: one per flagger, bloom filter, clear.
	u, err := e.svc.FlagUser(e.ctx, e.admin, "zed")
	require.NoError(t, err)
	require.Equal(t, 1, u.Users[0].FlagCount)
	require.True(t, chat.BloomContains(u.Users[0].Hashflag, e.admin))
	require.Equal(t, 1024, u.Users[0].Hashflag.Bits)
	u, _ = e.svc.FlagUser(e.ctx, e.admin, "zed")
	require.Equal(t, 1, u.Users[0].FlagCount)
	u, _ = e.svc.FlagUser(e.ctx, "amy", "zed")
	require.Equal(t, 2, u.Users[0].FlagCount)
	fl, err := e.svc.QueryUsers(e.ctx, e.admin, chat.UserQuery{Filter: "flagged"})
	require.NoError(t, err)
	require.Len(t, fl.Users, 1)
	require.NoError(t, e.svc.ClearUserFlags(e.ctx, e.admin, "zed"))
	fl, _ = e.svc.QueryUsers(e.ctx, e.admin, chat.UserQuery{Filter: "flagged"})
	require.Empty(t, fl.Users)
	u, _ = e.svc.GetUser(e.ctx, e.admin, "zed")
	require.Equal(t, chat.Hashflag{Hash: []uint32{}}, u.Users[0].Hashflag)
	u, _ = e.svc.FlagUser(e.ctx, e.admin, "zed")
	require.Equal(t, 1, u.Users[0].FlagCount, "flagging again after clear counts")
}

func TestReactions(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice", "bob")
	m1 := e.mustPost("alice", "c", "one")
	m2 := e.mustPost("alice", "c", "two")
	id, err := e.svc.AddReaction(e.ctx, e.admin, m1.MessageID, "message", "like")
	require.NoError(t, err)
	id2, err := e.svc.AddReaction(e.ctx, e.admin, m1.MessageID, "message", "like")
	require.NoError(t, err)
	require.Equal(t, id, id2, "idempotent")
	_, err = e.svc.AddReaction(e.ctx, "bob", m1.MessageID, "message", "like")
	require.NoError(t, err)
	_, err = e.svc.AddReaction(e.ctx, "bob", m2.MessageID, "message", "like")
	require.NoError(t, err)
	_, err = e.svc.AddReaction(e.ctx, "bob", m2.MessageID, "message", "love")
	require.NoError(t, err)
	_, err = e.svc.AddReaction(e.ctx, e.admin, m1.MessageID, "post", "like")
	requireCode(t, err, chat.CodeBadRequest)
	_, err = e.svc.AddReaction(e.ctx, e.admin, "missing", "message", "like")
	requireCode(t, err, chat.CodeNotFound)

	got, _ := e.svc.GetMessage(e.ctx, e.admin, m1.MessageID)
	require.Equal(t, map[string]int{"like": 2}, got.Messages[0].Reactions)
	require.Equal(t, 2, got.Messages[0].ReactionsCount)

	rs, err := e.svc.QueryReactors(e.ctx, e.admin, chat.ReactorQuery{ReferenceID: m1.MessageID, ReferenceType: "message"})
	require.NoError(t, err)
	require.Len(t, rs.Results.Reactions, 1)
	require.Len(t, rs.Results.Reactions[0].Reactors, 2)
	require.Len(t, rs.Results.Users, 2)

	most, err := e.svc.MostReacted(e.ctx, e.admin, chat.MostReactedQuery{ReactionName: "like"})
	require.NoError(t, err)
	require.Len(t, most.Messages, 2)
	require.Equal(t, m1.MessageID, most.Messages[0].MessageID)
	most, _ = e.svc.MostReacted(e.ctx, e.admin, chat.MostReactedQuery{ReactionName: "love"})
	require.Len(t, most.Messages, 1)
	_, err = e.svc.MostReacted(e.ctx, e.admin, chat.MostReactedQuery{ReactionName: "love", Limit: 101})
	requireCode(t, err, chat.CodeBadRequest)

	rid, err := e.svc.RemoveReaction(e.ctx, e.admin, m1.MessageID, "message", "like")
	require.NoError(t, err)
	require.Equal(t, id, rid)
	rid, err = e.svc.RemoveReaction(e.ctx, e.admin, m1.MessageID, "message", "like")
	require.NoError(t, err)
	require.Empty(t, rid, "removing again is a no-op")
	got, _ = e.svc.GetMessage(e.ctx, e.admin, m1.MessageID)
	require.Equal(t, 1, got.Messages[0].ReactionsCount)
	most, _ = e.svc.MostReacted(e.ctx, e.admin, chat.MostReactedQuery{ReactionName: "like"})
	require.Len(t, most.Messages, 2)
	require.Equal(t, m2.MessageID, most.Messages[0].MessageID, "tie broken by newest")
}

func TestAdmins(t *testing.T) {
	e := newEnv(t)
	a, tok, err := e.svc.CreateAdmin(e.ctx, "", "ops", "ops-user")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(tok), 40)
	require.NotContains(t, string(a.TokenHash), tok)
	got, err := e.svc.Authenticate(e.ctx, tok)
	require.NoError(t, err)
	require.Equal(t, "ops-user", got.UserID)
	u, _ := e.svc.GetUser(e.ctx, e.admin, "ops-user")
	require.Contains(t, u.Users[0].Roles, chat.RoleGlobalAdmin)
	_, _, err = e.svc.CreateAdmin(e.ctx, "", "ops", "")
	requireCode(t, err, chat.CodeConflict)
	_, err = e.svc.Authenticate(e.ctx, tok+"x")
	requireCode(t, err, chat.CodeUnauthorized)
	_, err = e.svc.Authenticate(e.ctx, "")
	requireCode(t, err, chat.CodeUnauthorized)
	require.NoError(t, e.svc.RevokeAdmin(e.ctx, "", "ops"))
	_, err = e.svc.Authenticate(e.ctx, tok)
	requireCode(t, err, chat.CodeUnauthorized)
	requireCode(t, e.svc.RevokeAdmin(e.ctx, "", "ghost"), chat.CodeNotFound)

	// A token just used (so remembered) stops working at once when rotated.
	_, tok2, err := e.svc.CreateAdmin(e.ctx, "", "ops2", "")
	require.NoError(t, err)
	_, err = e.svc.Authenticate(e.ctx, tok2)
	require.NoError(t, err)
	tok3, err := e.svc.RotateAdmin(e.ctx, "", "ops2")
	require.NoError(t, err)
	_, err = e.svc.Authenticate(e.ctx, tok2)
	requireCode(t, err, chat.CodeUnauthorized)
	got, err = e.svc.Authenticate(e.ctx, tok3)
	require.NoError(t, err)
	require.Equal(t, "ops2", got.Name)
	got.Name = "changed" // the caller's copy
	got, err = e.svc.Authenticate(e.ctx, tok3)
	require.NoError(t, err)
	require.Equal(t, "ops2", got.Name)
	require.NoError(t, e.svc.RevokeAdmin(e.ctx, "", "ops2"))
	_, err = e.svc.Authenticate(e.ctx, tok3)
	requireCode(t, err, chat.CodeUnauthorized)
	as, err := e.svc.ListAdmins(e.ctx)
	require.NoError(t, err)
	require.Len(t, as, 3)
}

func TestEventsGoToTheOutbox(t *testing.T) {
	e := newEnv(t)
	w, err := e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/chat", nil)
	require.NoError(t, err)
	require.NotEmpty(t, w.Secret)
	only, err := e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/msgs", []string{chat.EventMessageDidCreate})
	require.NoError(t, err)
	_, err = e.svc.CreateWebhook(e.ctx, e.admin, "ftp://x", nil)
	requireCode(t, err, chat.CodeBadRequest)
	_, err = e.svc.CreateWebhook(e.ctx, e.admin, "https://x.io", []string{"nope"})
	requireCode(t, err, chat.CodeBadRequest)

	e.channel("c", "alice")
	_, err = e.svc.AddUsers(e.ctx, e.admin, "c", []string{"bob"})
	require.NoError(t, err)
	_, err = e.svc.JoinChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	m := e.mustPost("alice", "c", "hello")

	var ds []*chat.Delivery
	require.NoError(t, e.store.View(e.ctx, func(tx chat.Tx) error {
		var err error
		ds, err = tx.ListDeliveries(e.ctx, w.WebhookID, "", 100)
		return err
	}))
	byEvent := map[string]chat.Envelope{}
	for _, d := range ds {
		var env chat.Envelope
		require.NoError(t, json.Unmarshal(d.Body, &env))
		require.Equal(t, d.RequestID, env.RequestID)
		require.Equal(t, w.WebhookID, env.WebhookID)
		require.Equal(t, d.Event, env.Event)
		byEvent[env.Event] = env
	}
	require.Contains(t, byEvent, chat.EventChannelDidCreate)
	require.Contains(t, byEvent, chat.EventChannelDidAddUsers)
	require.Contains(t, byEvent, chat.EventChannelDidJoin)
	require.Contains(t, byEvent, chat.EventMessageDidCreate)

	var created struct {
		Channel map[string]any `json:"channel"`
		UserIDs []string       `json:"userIds"`
		Users   []chat.User    `json:"users"`
	}
	require.NoError(t, json.Unmarshal(byEvent[chat.EventChannelDidCreate].Data, &created))
	require.Equal(t, "c", created.Channel["channelId"])
	require.Equal(t, []string{"alice"}, created.UserIDs)
	var added struct {
		UserIDs []string    `json:"userIds"`
		AdderID string      `json:"adderId"`
		Users   []chat.User `json:"users"`
	}
	require.NoError(t, json.Unmarshal(byEvent[chat.EventChannelDidAddUsers].Data, &added))
	require.Equal(t, []string{"bob"}, added.UserIDs)
	require.Equal(t, e.admin, added.AdderID)
	require.Len(t, added.Users, 2)
	var msg chat.MessageEventData
	require.NoError(t, json.Unmarshal(byEvent[chat.EventMessageDidCreate].Data, &msg))
	require.Equal(t, m.MessageID, msg.Messages[0].MessageID)
	require.Equal(t, "alice", msg.Users[0].UserID)

	// The filtered webhook only got the message event.
	require.NoError(t, e.store.View(e.ctx, func(tx chat.Tx) error {
		ds, err := tx.ListDeliveries(e.ctx, only.WebhookID, "", 100)
		require.Len(t, ds, 1)
		require.Equal(t, chat.EventMessageDidCreate, ds[0].Event)
		return err
	}))
	// A failed change writes no event.
	_, err = e.post("nobody", "c", "x")
	require.Error(t, err)
	require.NoError(t, e.store.View(e.ctx, func(tx chat.Tx) error {
		ds, err := tx.ListDeliveries(e.ctx, only.WebhookID, "", 100)
		require.Len(t, ds, 1)
		return err
	}))
	list, err := e.svc.ListWebhooks(e.ctx, e.admin)
	require.NoError(t, err)
	require.Len(t, list.Webhooks, 2)
	require.Empty(t, list.Webhooks[0].Secret, "secrets are shown only at creation")
}

func TestChannelQueryFilters(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 12; i++ {
		e.clk.Add(time.Millisecond)
		tags := []string{"even"}
		if i%2 == 1 {
			tags = []string{"odd"}
		}
		_, err := e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: fmt.Sprintf("c%02d", i), Type: "standard", Tags: tags, UserIDs: []string{"u" + fmt.Sprint(i%3)}})
		require.NoError(t, err)
	}
	_, err := e.svc.JoinChannel(e.ctx, e.admin, "c05")
	require.NoError(t, err)
	q, err := e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{})
	require.NoError(t, err)
	require.Len(t, q.Channels, 10)
	require.Equal(t, "c11", q.Channels[0].ChannelID, "newest first")
	require.NotEmpty(t, q.Paging.Next)
	q2, err := e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{Token: q.Paging.Next})
	require.NoError(t, err)
	require.Len(t, q2.Channels, 2)
	require.Equal(t, "c01", q2.Channels[0].ChannelID)
	q, _ = e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{Filter: "member"})
	require.Len(t, q.Channels, 1)
	require.Len(t, q.ChannelUsers, 1)
	require.Equal(t, chat.MembershipMember, q.ChannelUsers[0].Membership)
	q, _ = e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{Filter: "notMember", Limit: 100})
	require.Len(t, q.Channels, 11)
	q, _ = e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{UserID: "u1", Limit: 100})
	require.Len(t, q.Channels, 4)
	q, _ = e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{Tags: []string{"odd"}, Limit: 100})
	require.Len(t, q.Channels, 6)
	q, _ = e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{ExcludeTags: []string{"odd"}, Limit: 100})
	require.Len(t, q.Channels, 6)
	q, _ = e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{Skip: 10, Limit: 5})
	require.Len(t, q.Channels, 2)
	_, err = e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{Filter: "weird"})
	requireCode(t, err, chat.CodeBadRequest)
	_, err = e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{Limit: 101})
	requireCode(t, err, chat.CodeBadRequest)
}

func TestFilesAndImages(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	out, err := e.svc.CreateFileMessage(e.ctx, e.admin, chat.CreateFileMessageInput{ChannelID: "c", FileName: "../../etc/passwd\r\n", MimeType: "text/plain", Data: []byte("root")})
	require.NoError(t, err)
	m := out.Messages[0]
	require.Equal(t, chat.MessageTypeFile, m.Type)
	require.Equal(t, "passwd", m.Data["fileName"])
	require.EqualValues(t, 4, m.Data["size"])
	fd, ok := m.File()
	require.True(t, ok)
	require.Regexp(t, `^/api/v2/messages/`+m.MessageID+`/files\?exp=\d+&sig=[A-Za-z0-9_-]{43}$`, fd.URL)
	fd.URL = ""
	require.Equal(t, chat.FileData{FileID: m.Data["fileId"].(string), FileName: "passwd", MimeType: "text/plain", Size: 4}, fd)
	_, ok = m.Image()
	require.False(t, ok, "a file message is not an image")
	_, ok = m.Text()
	require.False(t, ok, "a file message has no text")
	b, _, err := e.svc.GetMessageBlob(e.ctx, e.admin, m.MessageID, "file")
	require.NoError(t, err)
	require.Equal(t, "root", string(b.Data))
	_, _, err = e.svc.GetMessageBlob(e.ctx, e.admin, m.MessageID, "small")
	requireCode(t, err, chat.CodeNotFound)

	img, err := e.svc.CreateImageMessage(e.ctx, e.admin, chat.CreateImageMessageInput{ChannelID: "c", Caption: "look", FileName: "p.png", MimeType: "image/png", Width: 2, Height: 1,
		Renditions: []chat.ImageRendition{{Name: "small", ContentType: "image/png", Width: 2, Height: 1, Data: []byte("s")}}})
	require.NoError(t, err)
	im := img.Messages[0]
	require.Equal(t, chat.MessageTypeImage, im.Type)
	require.Equal(t, "look", im.Data["caption"])
	id, ok := im.Image()
	require.True(t, ok)
	require.Len(t, id.URLs, 1)
	require.Regexp(t, `^/api/v2/messages/`+im.MessageID+`/images\?size=small&exp=\d+&sig=[A-Za-z0-9_-]{43}$`, id.URLs["small"])
	id.URLs = nil
	require.Equal(t, chat.ImageData{Caption: "look", FileID: im.Data["fileId"].(string), FileName: "p.png", MimeType: "image/png", Width: 2, Height: 1,
		Sizes: []chat.ImageSize{{Size: chat.ImageSmall, Width: 2, Height: 1, MimeType: "image/png", FileSize: 1}}}, id)
	small, ok := id.Rendition(chat.ImageSmall)
	require.True(t, ok)
	require.EqualValues(t, 1, small.FileSize)
	_, ok = id.Rendition(chat.ImageFull)
	require.False(t, ok, "full was not kept")
	_, ok = im.File()
	require.False(t, ok, "an image message is not a file")
	_, _, err = e.svc.GetMessageBlob(e.ctx, e.admin, im.MessageID, "full")
	requireCode(t, err, chat.CodeNotFound)
	require.NoError(t, e.svc.DeleteMessage(e.ctx, e.admin, im.MessageID))
	_, _, err = e.svc.GetMessageBlob(e.ctx, e.admin, im.MessageID, "small")
	requireCode(t, err, chat.CodeNotFound)

	_, err = e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"nsfw"}, true)
	require.NoError(t, err)
	_, err = e.svc.CreateImageMessage(e.ctx, e.admin, chat.CreateImageMessageInput{ChannelID: "c", Caption: "so nsfw", Renditions: []chat.ImageRendition{{Name: "small", Data: []byte("s")}}})
	requireCode(t, err, chat.CodeBlacklisted)
}

func TestSafeFileName(t *testing.T) {
	cases := map[string]string{
		"a.txt":                "a.txt",
		"../../x.sh":           "x.sh",
		`C:\\Users\\me\\a.doc`: "a.doc",
		"":                     "file",
		"..":                   "file",
		"a\"b;c.txt":           "abc.txt",
		"evil\u202etxt.exe":    "eviltxt.exe",
		"résumé.pdf":           "résumé.pdf",
	}
	for in, want := range cases {
		require.Equal(t, want, chat.SafeFileName(in), in)
	}
}

// Every resource field is present in JSON, with [] or {} when unset, on
// every read and write path and in events.
func TestResourceFieldsAlwaysPresent(t *testing.T) {
	e := newEnv(t)
	_, err := e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/all", nil)
	require.NoError(t, err)
	e.channel("c", "alice")
	_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "bob"})
	require.NoError(t, err)
	requireFields := func(v any, fields ...string) {
		t.Helper()
		b, err := json.Marshal(v)
		require.NoError(t, err)
		// lastActiveAt is a time or null: null until the user's first stream.
		require.NotContains(t, strings.ReplaceAll(string(b), `"lastActiveAt":null`, ""), "null", string(b))
		for _, f := range fields {
			require.Contains(t, string(b), f, string(b))
		}
	}
	userFields := []string{`"roles":[]`, `"metadata":{}`, `"hash":[]`, `"isGlobalBan":false`, `"flagCount":0`,
		`"online":false`, `"lastActiveAt":null`}
	u, err := e.svc.GetUser(e.ctx, e.admin, "bob")
	require.NoError(t, err)
	requireFields(u, userFields...)
	q, err := e.svc.QueryUsers(e.ctx, e.admin, chat.UserQuery{Search: "bob"})
	require.NoError(t, err)
	requireFields(q.Users, userFields...)
	up, err := e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "carol"})
	require.NoError(t, err)
	requireFields(up, userFields...)
	fl, err := e.svc.FlagUser(e.ctx, e.admin, "bob")
	require.NoError(t, err)
	requireFields(fl, `"roles":[]`, `"metadata":{}`, `"bits":1024`)
	require.NoError(t, e.svc.GlobalBan(e.ctx, e.admin, "carol", false))
	rs, err := e.svc.PutRoles(e.ctx, e.admin, []string{"empty"}, []string{})
	require.NoError(t, err)
	requireFields(rs, `"permissions":[]`)
	rl, err := e.svc.QueryRoles(e.ctx, e.admin, "")
	require.NoError(t, err)
	requireFields(rl, `"permissions":[]`)
	wl, err := e.svc.ListWebhooks(e.ctx, e.admin)
	require.NoError(t, err)
	requireFields(wl, `"events":[]`)

	// The user events carry complete users too.
	require.NoError(t, e.store.View(e.ctx, func(tx chat.Tx) error {
		ds, err := tx.ListDeliveries(e.ctx, wl.Webhooks[0].WebhookID, "", 100)
		for _, d := range ds {
			if d.Event == chat.EventUserDidUpdate || d.Event == chat.EventUserDidGlobalBan {
				var env chat.Envelope
				require.NoError(t, json.Unmarshal(d.Body, &env))
				require.NotContains(t, strings.ReplaceAll(string(env.Data), `"lastActiveAt":null`, ""), "null", d.Event)
				require.Contains(t, string(env.Data), `"online":false`, d.Event)
				require.Contains(t, string(env.Data), `"roles":[]`, d.Event)
			}
		}
		return err
	}))
}

// Links written with a scheme are links whatever their host: an IP
// address, a name without a dot, user information before an @.
func TestWhitelistLinksOfAnyHost(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	_, err := e.svc.AddRules(e.ctx, e.admin, chat.Whitelist, []string{"example.com"}, false)
	require.NoError(t, err)
	for _, s := range []string{
		"http://192.168.1.1/x", "see https://localhost:8080/admin", "https://example.com@evil.io/",
		"https://user:pw@evil.io", "http://evil", "HTTPS://EVIL.IO", "http://[::1]:80/x", "ftp://10.0.0.1",
	} {
		_, err := e.post(e.admin, "c", s)
		requireCode(t, err, chat.CodeLinkNotAllowed)
		require.NotContains(t, err.Error(), "example.com\"", s)
	}
	for _, s := range []string{
		"https://user@example.com/x", "https://example.com:8443/a", "(see https://example.com/a).",
		"https://sub.example.com, and http://example.com.", "ratio 3://4 is not a link",
	} {
		_, err := e.post(e.admin, "c", s)
		require.NoError(t, err, s)
	}
}

// Case-insensitive matching folds case the way RE2 does, for plain words
// and for patterns alike.
func TestBlacklistFoldsCaseLikeRE2(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	_, err := e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"σοφίας", "spam"}, true)
	require.NoError(t, err)
	_, err = e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"x[A-z]y", "[Z-a]q"}, false)
	require.NoError(t, err)
	for _, s := range []string{"ΣΟΦΊΑΣ", "η σοφίας.", "ſpam", "\u212a spam", "x_y", "X^Y", "_q"} {
		_, err := e.post(e.admin, "c", s)
		requireCode(t, err, chat.CodeBlacklisted)
	}
	for _, s := range []string{"ΣΟΦΊΑΣΑ", "spammy", "x-y", "-q"} {
		_, err := e.post(e.admin, "c", s)
		require.NoError(t, err, s)
	}
}

// Adding an entry that exists updates it instead of adding another.
func TestBlacklistAddExistingUpdates(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	_, err := e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"bad"}, true)
	require.NoError(t, err)
	e.mustPost(e.admin, "c", "badge")
	e.clk.Add(time.Second)
	out, err := e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"bad", "bad"}, false)
	require.NoError(t, err)
	require.Len(t, out.Records, 1)
	require.False(t, out.Records[0].IsMatchExactWord)
	require.True(t, out.Records[0].UpdatedAt.After(out.Records[0].CreatedAt.Time))
	_, err = e.post(e.admin, "c", "badge")
	requireCode(t, err, chat.CodeBlacklisted)
	all, err := e.svc.QueryRules(e.ctx, e.admin, chat.Blacklist, nil)
	require.NoError(t, err)
	require.Len(t, all.Records, 1)
}

// Reactions are writes: on a closed channel they are 400300.
func TestReactionsOnClosedChannel(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	m := e.mustPost(e.admin, "c", "hi")
	_, err := e.svc.AddReaction(e.ctx, e.admin, m.MessageID, "message", "like")
	require.NoError(t, err)
	require.NoError(t, e.svc.CloseChannel(e.ctx, e.admin, "c"))
	_, err = e.svc.AddReaction(e.ctx, e.admin, m.MessageID, "message", "love")
	requireCode(t, err, chat.CodeForbidden)
	_, err = e.svc.RemoveReaction(e.ctx, e.admin, m.MessageID, "message", "like")
	requireCode(t, err, chat.CodeForbidden)
}

// A regex whitelist entry matches the whole host, or the host with its
// path.
func TestWhitelistRegexEntryHostOrPath(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	_, err := e.svc.AddRules(e.ctx, e.admin, chat.Whitelist, []string{`.*\.gov`, `example\.com/pub/.*`}, false)
	require.NoError(t, err)
	for _, s := range []string{"https://data.gov/x", "https://www.usa.gov/x?y=1", "www.usa.gov", "http://example.com/pub/a"} {
		_, err := e.post(e.admin, "c", s)
		require.NoError(t, err, s)
	}
	for _, s := range []string{"https://gov.evil.io/x", "https://usa.gov.evil.io", "http://example.com/private", "http://example.com"} {
		_, err := e.post(e.admin, "c", s)
		requireCode(t, err, chat.CodeLinkNotAllowed)
	}
}

// Paging tokens work for ids of any allowed content and length.
func TestPagingTokensForLongIDs(t *testing.T) {
	e := newEnv(t)
	for _, c := range []string{"<", ">", "&"} {
		e.channel(strings.Repeat(c, 256))
		e.clk.Add(time.Millisecond)
	}
	seen := 0
	q := chat.ChannelQuery{Limit: 1}
	for {
		out, err := e.svc.QueryChannels(e.ctx, e.admin, q)
		require.NoError(t, err)
		seen += len(out.Channels)
		if out.Paging.Next == "" {
			break
		}
		q.Token = out.Paging.Next
	}
	require.Equal(t, 3, seen)
}

// Reactors are listed newest first, and paging through them visits each
// once.
func TestReactorsNewestFirst(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "u1", "u2", "u3")
	m := e.mustPost(e.admin, "c", "hi")
	for _, u := range []string{"u1", "u2", "u3"} {
		e.clk.Add(time.Second)
		_, err := e.svc.AddReaction(e.ctx, u, m.MessageID, "message", "like")
		require.NoError(t, err)
	}
	var order []string
	q := chat.ReactorQuery{ReferenceID: m.MessageID, ReferenceType: "message", Limit: 2}
	for {
		out, err := e.svc.QueryReactors(e.ctx, e.admin, q)
		require.NoError(t, err)
		for _, r := range out.Results.Reactions[0].Reactors {
			order = append(order, r.UserID)
		}
		if out.Paging.Next == "" {
			break
		}
		q.Token = out.Paging.Next
	}
	require.Equal(t, []string{"u3", "u2", "u1"}, order)
}

// A channel ban purges the files of the banned user's messages there.
func TestBanPurgesFiles(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice", "bob")
	fa, err := e.svc.CreateFileMessage(e.ctx, "alice", chat.CreateFileMessageInput{ChannelID: "c", FileName: "a.txt", Data: []byte("a")})
	require.NoError(t, err)
	fb, err := e.svc.CreateFileMessage(e.ctx, "bob", chat.CreateFileMessageInput{ChannelID: "c", FileName: "b.txt", Data: []byte("b")})
	require.NoError(t, err)
	require.NoError(t, e.svc.BanUsers(e.ctx, e.admin, "c", []string{"alice"}))
	e.requireBlobGone(fa.Messages[0].MessageID, "file")
	b, _, err := e.svc.GetMessageBlob(e.ctx, e.admin, fb.Messages[0].MessageID, "file")
	require.NoError(t, err)
	require.Equal(t, "b", string(b.Data))
}

// TestQueryMessagesUsers checks the users side-loaded with a page: each
// author once, in the order of their first message, whoever asks (the
// caller's own record, read to authorize, is not read again when the
// caller is among the authors) and whether the caller is an author, the
// only author or none.
func TestQueryMessagesUsers(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice", "bob", "carol", "dave")
	e.channel("solo", "alice", "bob")
	for _, a := range []string{"bob", "alice", "carol", "bob", "alice"} {
		e.mustPost(a, "c", "hi from "+a)
	}
	e.mustPost("alice", "solo", "alone")
	names := func(l *chat.MessageList) []string {
		var out []string
		for _, u := range l.Users {
			out = append(out, u.UserID+":"+u.DisplayName)
		}
		return out
	}
	for _, tc := range []struct {
		actor, channel string
		want           []string
	}{
		{"alice", "c", []string{"bob:bob", "alice:alice", "carol:carol"}},
		{"bob", "c", []string{"bob:bob", "alice:alice", "carol:carol"}},
		{"carol", "c", []string{"bob:bob", "alice:alice", "carol:carol"}},
		{"dave", "c", []string{"bob:bob", "alice:alice", "carol:carol"}},
		{e.admin, "c", []string{"bob:bob", "alice:alice", "carol:carol"}},
		{"alice", "solo", []string{"alice:alice"}},
		{"bob", "solo", []string{"alice:alice"}},
	} {
		l, err := e.svc.QueryMessages(e.ctx, tc.actor, chat.MessageQuery{ChannelID: tc.channel, First: 10})
		require.NoError(t, err)
		require.Equal(t, tc.want, names(l), "%s in %s", tc.actor, tc.channel)
		for _, u := range l.Users {
			require.NotNil(t, u.Roles, "%s in %s: user %s presented", tc.actor, tc.channel, u.UserID)
			require.NotNil(t, u.Metadata)
		}
	}
	// A renamed author: the page shows the new name, read in the page's
	// transaction, also to that author.
	name := "Alice A."
	_, err := e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "alice", DisplayName: &name})
	require.NoError(t, err)
	for _, actor := range []string{"alice", "bob"} {
		l, err := e.svc.QueryMessages(e.ctx, actor, chat.MessageQuery{ChannelID: "c", First: 10})
		require.NoError(t, err)
		require.Equal(t, []string{"bob:bob", "alice:Alice A.", "carol:carol"}, names(l), actor)
	}
}
