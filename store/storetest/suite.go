package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// Run runs the conformance suite against the adapter that h makes. Every
// area is a subtest (Tx, Locks, Channels, Members, ReadState, Messages, AppendMessage, Users, Roles, Rules,
// Reactions, Flags, Admins, Webhooks, Outbox, Events, Blobs, Meta, Tickets, Concurrency,
// Audit, Purge, MuteExpiry, Reports, UserData, Devices, NotificationLevels, Mentions, Pushes, Presence, Persistence, OutboxWatcher) and every case inside runs in parallel on its
// own store from h.New, so adapters must allow several live stores at once.
//
// Values written by the suite are JSON-native (numbers are float64), so
// adapters that store custom data and metadata as JSON round-trip them
// exactly. Comparisons treat a nil map or slice and an empty one as equal,
// ignore the derived IsMuted fields, and compare times as instants, after
// checking that every returned time is in UTC.
//
// Beyond the letter of the Store documentation the suite expects what the
// engine relies on: ids order by byte value (Postgres: COLLATE "C"); the
// user search and role filter treat % and _ literally; a done context makes
// Update and View fail before fn runs with an error that matches
// context.Canceled; rows may reference rows that do not exist (a blob
// without its message, a relation without its user), because the Service,
// not the schema, keeps references consistent. Transaction functions in the
// suite are safe to retry, so adapters may re-run fn after a serialization
// failure.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("storetest: Harness.New is nil")
	}
	areas := []struct {
		name  string
		cases []tcase
	}{
		{"Tx", txCases},
		{"Locks", lockCases},
		{"Channels", channelCases},
		{"Members", memberCases},
		{"ReadState", readCases},
		{"Messages", messageCases},
		{"AppendMessage", appendCases},
		{"Users", userCases},
		{"Search", searchCases},
		{"Roles", roleCases},
		{"Rules", ruleCases},
		{"Reactions", reactionCases},
		{"Flags", flagCases},
		{"Admins", adminCases},
		{"AdminSessions", adminSessionCases},
		{"Webhooks", webhookCases},
		{"Outbox", outboxCases},
		{"Events", eventCases},
		{"Blobs", blobCases},
		{"Meta", metaCases},
		{"Tickets", ticketCases},
		{"Blocks", blockCases},
		{"Concurrency", concurrencyCases},
		{"Audit", auditCases},
		{"Purge", purgeCases},
		{"MuteExpiry", expiryCases},
		{"Reports", reportCases},
		{"UserData", userDataCases},
		{"Devices", deviceCases},
		{"NotificationLevels", notificationCases},
		{"Mentions", mentionCases},
		{"Pushes", pushCases},
		{"Presence", presenceCases},
	}
	for _, a := range areas {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range a.cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.run(t, newEnv(t, h.New(t)))
				})
			}
		})
	}
	// Persistence is a capability: an adapter without it (Harness.Reopen
	// nil, the memory store) has no such area rather than a skipped one.
	if h.Reopen != nil {
		t.Run("Persistence", func(t *testing.T) {
			t.Parallel()
			testPersistence(t, h)
		})
	} else {
		t.Log("storetest: no Persistence area: Harness.Reopen is nil (adapter without persistence)")
	}
	t.Run("OutboxWatcher", func(t *testing.T) {
		t.Parallel()
		testOutboxWatcher(t, newEnv(t, h.New(t)))
	})
}

// tcase is one conformance case; it gets a fresh store.
type tcase struct {
	name string
	run  func(t *testing.T, e *env)
}

// env is the store under test with helpers bound to one test.
type env struct {
	t   *testing.T
	s   chat.Store
	ctx context.Context
}

func newEnv(t *testing.T, s chat.Store) *env {
	require.NotNil(t, s, "Harness.New returned nil")
	return &env{t: t, s: s, ctx: context.Background()}
}

// update runs fn in a read-write transaction that must succeed.
func (e *env) update(fn func(tx chat.Tx) error) {
	e.t.Helper()
	require.NoError(e.t, e.s.Update(e.ctx, fn))
}

// view runs fn in a read-only transaction that must succeed.
func (e *env) view(fn func(tx chat.Tx) error) {
	e.t.Helper()
	require.NoError(e.t, e.s.View(e.ctx, fn))
}

// read returns what fn reads in a View that must succeed.
func read[T any](e *env, fn func(tx chat.Tx) (T, error)) T {
	e.t.Helper()
	v, err := readErr(e, fn)
	require.NoError(e.t, err)
	return v
}

// readErr returns what fn reads in a View, and its error.
func readErr[T any](e *env, fn func(tx chat.Tx) (T, error)) (T, error) {
	var out T
	err := e.s.View(e.ctx, func(tx chat.Tx) error {
		v, err := fn(tx)
		out = v
		return err
	})
	return out, err
}

// write returns what fn returns in an Update that must succeed.
func write[T any](e *env, fn func(tx chat.Tx) (T, error)) T {
	e.t.Helper()
	v, err := writeErr(e, fn)
	require.NoError(e.t, err)
	return v
}

// writeErr returns what fn returns in an Update, and its error.
func writeErr[T any](e *env, fn func(tx chat.Tx) (T, error)) (T, error) {
	var out T
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		v, err := fn(tx)
		out = v
		return err
	})
	return out, err
}

// ---- common reads ----

func (e *env) channel(id string) *chat.Channel {
	e.t.Helper()
	return read(e, func(tx chat.Tx) (*chat.Channel, error) { return tx.GetChannel(e.ctx, id) })
}

func (e *env) message(id string) *chat.Message {
	e.t.Helper()
	return read(e, func(tx chat.Tx) (*chat.Message, error) { return tx.GetMessage(e.ctx, id) })
}

func (e *env) user(id string) *chat.User {
	e.t.Helper()
	return read(e, func(tx chat.Tx) (*chat.User, error) { return tx.GetUser(e.ctx, id) })
}

func (e *env) delivery(id string) *chat.Delivery {
	e.t.Helper()
	return read(e, func(tx chat.Tx) (*chat.Delivery, error) { return tx.GetDelivery(e.ctx, id) })
}

// ---- common writes ----

func (e *env) createChannels(cs ...*chat.Channel) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error {
		for _, c := range cs {
			if err := tx.CreateChannel(e.ctx, c); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *env) createMessages(ms ...*chat.Message) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error {
		for _, m := range ms {
			if err := tx.CreateMessage(e.ctx, m); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *env) createUsers(us ...*chat.User) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error {
		for _, u := range us {
			if err := tx.CreateUser(e.ctx, u); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *env) putMembers(cus ...*chat.ChannelUser) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error {
		for _, cu := range cus {
			if err := tx.PutChannelUser(e.ctx, cu); err != nil {
				return err
			}
		}
		return nil
	})
}

// ---- errors ----

func requireNotFound(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	requireCode(t, err, chat.ErrNotFound, chat.CodeNotFound, msgAndArgs...)
}

func requireConflict(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	requireCode(t, err, chat.ErrConflict, chat.CodeConflict, msgAndArgs...)
}

func requireCode(t *testing.T, err error, sentinel error, code chat.Code, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	if !errors.Is(err, sentinel) {
		require.Failf(t, "wrong error", "want code %d (%v), got code %d: %v %s",
			code, code, chat.ErrorCode(err), err, msgText(msgAndArgs))
	}
}

func msgText(msgAndArgs []any) string {
	if len(msgAndArgs) == 0 {
		return ""
	}
	if s, ok := msgAndArgs[0].(string); ok {
		return "(" + s + ")"
	}
	return ""
}

// ---- fixtures ----

// base is the suite's epoch; at(ms) is base plus ms milliseconds.
var base = time.Date(2024, 5, 6, 7, 8, 9, 123_000_000, time.UTC)

func at(ms int64) chat.Time { return chat.NewTime(base.Add(time.Duration(ms) * time.Millisecond)) }

func atp(ms int64) *chat.Time { v := at(ms); return &v }

func newChannel(id string, created chat.Time, tags ...string) *chat.Channel {
	return &chat.Channel{
		ChannelID: id, Type: chat.ChannelTypeStandard, DisplayName: "Channel " + id,
		Metadata: map[string]any{"id": id}, Tags: tags,
		LastActivity: created, CreatedAt: created, UpdatedAt: created,
	}
}

func newMessage(id, channelID, userID string, seg int64) *chat.Message {
	return &chat.Message{
		MessageID: id, ChannelID: channelID, UserID: userID, Type: chat.MessageTypeText,
		Data: map[string]any{"text": "hello " + id}, ChannelSegment: seg,
		CreatedAt: at(seg * 1000), UpdatedAt: at(seg * 1000),
	}
}

func newUser(id, name string) *chat.User {
	return &chat.User{UserID: id, DisplayName: name, CreatedAt: at(0), UpdatedAt: at(0)}
}

func member(channelID, userID string, membership chat.Membership) *chat.ChannelUser {
	return &chat.ChannelUser{ChannelID: channelID, UserID: userID, Membership: membership, CreatedAt: at(0), UpdatedAt: at(0)}
}

func newDelivery(id, webhookID string, next, created chat.Time) *chat.Delivery {
	return &chat.Delivery{
		RequestID: id, WebhookID: webhookID, Event: chat.EventMessageDidCreate,
		Body:  []byte(`{"requestId":"` + id + `","webhookId":"` + webhookID + `","event":"message.didCreate","data":{}}`),
		State: chat.DeliveryPending, NextAttemptAt: next, CreatedAt: created, UpdatedAt: created,
	}
}

// ---- canonical forms for comparison ----

// ct checks that a returned time is in UTC and returns it as a plain UTC
// instant, so that times compare by instant.
func ct(t *testing.T, v chat.Time) chat.Time {
	t.Helper()
	require.Equal(t, time.UTC, v.Location(), "times must come back in UTC: %v", v.Time)
	return chat.Time{Time: time.UnixMilli(v.UnixMilli()).UTC()}
}

func ctp(t *testing.T, v *chat.Time) *chat.Time {
	t.Helper()
	if v == nil {
		return nil
	}
	c := ct(t, *v)
	return &c
}

func cmap(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}

func cstrs(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func chash(h chat.Hashflag) chat.Hashflag {
	if len(h.Hash) == 0 {
		h.Hash = nil
	}
	return h
}

func cChannel(t *testing.T, c *chat.Channel) chat.Channel {
	t.Helper()
	require.NotNil(t, c)
	v := *c
	v.Metadata = cmap(v.Metadata)
	v.Tags = cstrs(v.Tags)
	v.IsMuted = false // derived from MuteTimeout by the Service
	v.MuteTimeout = ctp(t, v.MuteTimeout)
	v.LastActivity = ct(t, v.LastActivity)
	v.CreatedAt = ct(t, v.CreatedAt)
	v.UpdatedAt = ct(t, v.UpdatedAt)
	return v
}

func cChannelUser(t *testing.T, cu *chat.ChannelUser) chat.ChannelUser {
	t.Helper()
	require.NotNil(t, cu)
	v := *cu
	v.IsMuted = false // derived from MuteTimeout by the Service
	v.MuteTimeout = ctp(t, v.MuteTimeout)
	v.CreatedAt = ct(t, v.CreatedAt)
	v.UpdatedAt = ct(t, v.UpdatedAt)
	return v
}

func cMessage(t *testing.T, m *chat.Message) chat.Message {
	t.Helper()
	require.NotNil(t, m)
	v := *m
	v.Data = cmap(v.Data)
	v.Tags = cstrs(v.Tags)
	v.CreatedAt = ct(t, v.CreatedAt)
	v.EditedAt = ctp(t, v.EditedAt)
	v.UpdatedAt = ct(t, v.UpdatedAt)
	v.Hashflag = chash(v.Hashflag)
	v.Reactions = creacts(v.Reactions)
	return v
}

func creacts(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range m {
		if n != 0 {
			out[k] = n
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func cUser(t *testing.T, u *chat.User) chat.User {
	t.Helper()
	require.NotNil(t, u)
	v := *u
	v.Roles = cstrs(v.Roles)
	v.Metadata = cmap(v.Metadata)
	v.Hashflag = chash(v.Hashflag)
	v.CreatedAt = ct(t, v.CreatedAt)
	v.UpdatedAt = ct(t, v.UpdatedAt)
	if v.TokensRevokedAt != nil {
		r := ct(t, *v.TokensRevokedAt)
		v.TokensRevokedAt = &r
	}
	return v
}

func cRole(t *testing.T, r *chat.Role) chat.Role {
	t.Helper()
	require.NotNil(t, r)
	v := *r
	v.Permissions = cstrs(v.Permissions)
	v.CreatedAt = ct(t, v.CreatedAt)
	v.UpdatedAt = ct(t, v.UpdatedAt)
	return v
}

func cRule(t *testing.T, r *chat.Rule) chat.Rule {
	t.Helper()
	require.NotNil(t, r)
	v := *r
	v.CreatedAt = ct(t, v.CreatedAt)
	v.UpdatedAt = ct(t, v.UpdatedAt)
	return v
}

func cReaction(t *testing.T, r *chat.Reaction) chat.Reaction {
	t.Helper()
	require.NotNil(t, r)
	v := *r
	v.CreatedAt = ct(t, v.CreatedAt)
	return v
}

func cAdmin(t *testing.T, a *chat.Admin) chat.Admin {
	t.Helper()
	require.NotNil(t, a)
	v := *a
	v.CreatedAt = ct(t, v.CreatedAt)
	v.RevokedAt = ctp(t, v.RevokedAt)
	return v
}

func cWebhook(t *testing.T, w *chat.Webhook) chat.Webhook {
	t.Helper()
	require.NotNil(t, w)
	v := *w
	v.Events = cstrs(v.Events)
	v.CreatedAt = ct(t, v.CreatedAt)
	v.UpdatedAt = ct(t, v.UpdatedAt)
	return v
}

func cDelivery(t *testing.T, d *chat.Delivery) chat.Delivery {
	t.Helper()
	require.NotNil(t, d)
	v := *d
	if len(v.Body) == 0 {
		v.Body = nil
	}
	v.NextAttemptAt = ct(t, v.NextAttemptAt)
	v.LeaseUntil = ctp(t, v.LeaseUntil)
	v.CreatedAt = ct(t, v.CreatedAt)
	v.UpdatedAt = ct(t, v.UpdatedAt)
	return v
}

func cAttempt(t *testing.T, a *chat.DeliveryAttempt) chat.DeliveryAttempt {
	t.Helper()
	require.NotNil(t, a)
	v := *a
	v.At = ct(t, v.At)
	return v
}

// ---- id lists ----

func channelIDs(cs []*chat.Channel) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ChannelID
	}
	return out
}

func messageIDs(ms []*chat.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.MessageID
	}
	return out
}

func userIDs(us []*chat.User) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.UserID
	}
	return out
}

func reactionIDs(rs []*chat.Reaction) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ReactionID
	}
	return out
}

func deliveryIDs(ds []*chat.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.RequestID
	}
	return out
}

func relUserIDs(cus []*chat.ChannelUser) []string {
	out := make([]string, len(cus))
	for i, cu := range cus {
		out[i] = cu.UserID
	}
	return out
}

func reversed[T any](s []T) []T {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// seenOnce checks that every id of want occurs exactly once in got and that
// got has no duplicate at all.
func seenOnce(t *testing.T, want, got []string, msgAndArgs ...any) {
	t.Helper()
	count := map[string]int{}
	for _, id := range got {
		count[id]++
	}
	for id, n := range count {
		require.Equalf(t, 1, n, "id %q returned %d times %s", id, n, msgText(msgAndArgs))
	}
	for _, id := range want {
		require.Equalf(t, 1, count[id], "id %q, present at the start, was skipped %s", id, msgText(msgAndArgs))
	}
}

// boundPages fails a paging loop that runs far longer than any case needs,
// so that a cursor bug fails the case instead of hanging it.
func boundPages(t *testing.T, pages int) {
	t.Helper()
	if pages > 200 {
		require.FailNow(t, "paging does not terminate: a cursor returns rows at or before itself")
	}
}

// errBoom is the error the suite's failing transactions return.
var errBoom = errors.New("storetest: boom")

// group runs fns concurrently and returns the first error.
func group(n int, fn func(i int) error) error {
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() { errs <- fn(i) }()
	}
	var first error
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
