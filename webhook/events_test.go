package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

// eventSink is a real receiver on 127.0.0.1 built from NewReceiver: it
// verifies both signatures of every delivery with the webhook's secret and
// keeps the decoded events.
type eventSink struct {
	*httptest.Server
	mu     sync.Mutex
	events []*Event
	secret []byte
}

func newEventSink(t *testing.T) *eventSink {
	k := &eventSink{}
	k.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		secret := k.secret
		k.mu.Unlock()
		NewReceiver(secret, func(_ context.Context, ev *Event) error {
			k.mu.Lock()
			defer k.mu.Unlock()
			k.events = append(k.events, ev)
			return nil
		}, WithStandardSignature(time.Minute)).ServeHTTP(w, r)
	}))
	t.Cleanup(k.Close)
	return k
}

func (k *eventSink) setSecret(s string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.secret = []byte(s)
}

// byName returns the events received so far, grouped by name.
func (k *eventSink) byName() map[string][]*Event {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string][]*Event{}
	for _, ev := range k.events {
		out[ev.Event] = append(out[ev.Event], ev)
	}
	return out
}

// keysOf returns the sorted keys of a JSON object.
func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Resource fields of the spec's section 2 tables (and docs/api.md sections 1 and 2 (Responses, Resources))
// that every event's resources carry.
var (
	channelFields = []string{"channelId", "type", "isDistinct", "metadata", "tags", "isMuted", "lastActivity",
		"createdAt", "updatedAt", "isRateLimited", "rateLimitWindow", "memberCount", "messageCount", "displayName"}
	messageFields = []string{"messageId", "channelId", "userId", "type", "data", "tags", "isDeleted", "createdAt",
		"editedAt", "updatedAt", "channelSegment", "flagCount", "hashflag"}
	userFields = []string{"userId", "displayName", "roles", "metadata", "flagCount", "hashflag", "createdAt", "updatedAt"}
	msTime     = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
)

// requireResource checks that a JSON object has every field of fields and
// that its createdAt is an ISO 8601 UTC time with milliseconds.
func requireResource(t *testing.T, what string, raw json.RawMessage, fields []string) {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for _, f := range fields {
		require.Contains(t, m, f, "%s lacks %s: %s", what, f, raw)
	}
	require.Regexp(t, msTime, m["createdAt"], "%s createdAt", what)
}

// eventData splits an event's data into its top-level values.
func eventData(t *testing.T, ev *Event) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(ev.Data, &m))
	return m
}

func requireList(t *testing.T, what string, raw json.RawMessage, fields []string) []map[string]any {
	t.Helper()
	var items []json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &items), "%s: %s", what, raw)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		requireResource(t, what, it, fields)
		var m map[string]any
		require.NoError(t, json.Unmarshal(it, &m))
		out = append(out, m)
	}
	return out
}

func idsOf(items []map[string]any, key string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it[key].(string))
	}
	sort.Strings(out)
	return out
}

func sortedStrings(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var out []string
	require.NoError(t, json.Unmarshal(raw, &out))
	sort.Strings(out)
	return out
}

// Every event, caused by the Service operation that emits it, reaches a
// real receiver through the dispatcher with both signatures verified, and
// carries the data shape of docs/api.md section 10 (the spec's four events
// exactly, key for key). A webhook with an events filter gets only the
// events it names.
func TestEveryEventDelivered(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := b.open(t)
			svc := adminService(t, s)

			all, some := newEventSink(t), newEventSink(t)
			hAll, err := svc.CreateWebhook(ctx, "admin", all.URL+"/all", nil)
			require.NoError(t, err)
			all.setSecret(hAll.Secret)
			hSome, err := svc.CreateWebhook(ctx, "admin", some.URL+"/some", []string{chat.EventChannelDidCreate, chat.EventReactionDidAdd})
			require.NoError(t, err)
			some.setSecret(hSome.Secret)
			start(t, s, testConfig(func(c *Config) { c.PollInterval = 20 * time.Millisecond }))

			const admin = "admin"
			_, err = svc.CreateChannel(ctx, admin, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
			require.NoError(t, err)
			_, err = svc.AddUsers(ctx, admin, "c", []string{"carol"})
			require.NoError(t, err)
			_, err = svc.JoinChannel(ctx, admin, "c")
			require.NoError(t, err)
			ml, err := svc.CreateMessage(ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: "text", Data: map[string]any{"text": "hello"}})
			require.NoError(t, err)
			mid := ml.Messages[0].MessageID
			rl, err := svc.CreateReport(ctx, "bob", chat.CreateReportInput{TargetType: chat.ReportTargetMessage, TargetID: mid, Reason: "spam"})
			require.NoError(t, err)
			_, err = svc.ResolveReport(ctx, admin, chat.ResolveReportInput{ReportID: rl.Reports[0].ReportID, Action: chat.ResolveDismiss})
			require.NoError(t, err)
			_, err = svc.FlagMessage(ctx, admin, mid)
			require.NoError(t, err)
			_, err = svc.UpdateMessage(ctx, admin, chat.UpdateMessageInput{MessageID: mid, Data: &map[string]any{"text": "hello, edited"}})
			require.NoError(t, err)
			_, err = svc.AddReaction(ctx, admin, mid, "message", "like")
			require.NoError(t, err)
			_, err = svc.RemoveReaction(ctx, admin, mid, "message", "like")
			require.NoError(t, err)
			require.NoError(t, svc.DeleteMessage(ctx, admin, mid))
			require.NoError(t, svc.MuteChannel(ctx, admin, "c", time.Minute))
			require.NoError(t, svc.MuteUsers(ctx, admin, "c", []string{"bob"}, time.Minute))
			require.NoError(t, svc.MuteUsers(ctx, admin, "c", []string{"bob"}, chat.Unmute))
			require.NoError(t, svc.MuteChannel(ctx, admin, "c", chat.Unmute))
			require.NoError(t, svc.RemoveUsers(ctx, admin, "c", []string{"carol"}))
			require.NoError(t, svc.BanUsers(ctx, admin, "c", []string{"bob"}))
			require.NoError(t, svc.UnbanUsers(ctx, admin, "c", []string{"bob"}))
			name := "Alice"
			_, err = svc.UpdateUser(ctx, admin, chat.UpdateUserInput{UserID: "alice", DisplayName: &name})
			require.NoError(t, err)
			require.NoError(t, svc.GlobalBan(ctx, admin, "carol", false))
			require.NoError(t, svc.GlobalUnban(ctx, admin, "carol"))
			_, err = svc.RenameChannel(ctx, admin, "c", "Renamed")
			require.NoError(t, err)
			require.NoError(t, svc.CloseChannel(ctx, admin, "c"))

			// Wait until every event has arrived (with the retries the
			// dispatcher may need, though none should be).
			var got map[string][]*Event
			require.Eventually(t, func() bool {
				got = all.byName()
				for _, n := range chat.EventNames {
					if len(got[n]) == 0 {
						return false
					}
				}
				// Two mutes (the channel, then bob): deliveries run
				// concurrently, so the second may arrive after the rest.
				if len(got[chat.EventChannelDidMute]) < 2 {
					return false
				}
				return len(some.byName()[chat.EventReactionDidAdd]) > 0 && len(some.byName()[chat.EventChannelDidCreate]) > 0
			}, patience, 10*time.Millisecond, "events received: %v", func() []string {
				var names []string
				for n := range all.byName() {
					names = append(names, n)
				}
				return names
			}())
			for n, evs := range got {
				for _, ev := range evs {
					require.Equal(t, hAll.WebhookID, ev.WebhookID)
					require.Equal(t, n, ev.Event)
					require.NotEmpty(t, ev.RequestID)
				}
			}

			// Reports: the report and the users it references.
			for _, n := range []string{chat.EventReportDidCreate, chat.EventReportDidResolve} {
				ev := got[n][0]
				require.Equal(t, []string{"reports", "users"}, keysOf(t, ev.Data), n)
				rd, err := ev.Report()
				require.NoError(t, err)
				require.Len(t, rd.Reports, 1)
				require.Equal(t, "bob", rd.Reports[0].ReporterID)
				require.Equal(t, mid, rd.Reports[0].TargetID)
				require.Equal(t, "c", rd.Reports[0].ChannelID)
				requireList(t, "user", mustJSON(t, rd.Users), userFields)
			}
			rd, err := got[chat.EventReportDidResolve][0].Report()
			require.NoError(t, err)
			require.Equal(t, chat.ReportResolved, rd.Reports[0].State)
			require.Equal(t, &chat.ReportResolution{Action: chat.ResolveDismiss, ActorID: admin}, rd.Reports[0].Resolution)
			_, err = got[chat.EventReportDidCreate][0].Message()
			require.Error(t, err, "a report event carries no message data")

			// Mutes lifted by hand.
			ev := got[chat.EventChannelDidUnmuteUsers][0]
			require.Equal(t, []string{"actorId", "channel", "reason", "userIds", "users"}, keysOf(t, ev.Data))
			d := eventData(t, ev)
			require.JSONEq(t, `"manual"`, string(d["reason"]))
			require.Equal(t, []string{"bob"}, sortedStrings(t, d["userIds"]))
			ev = got[chat.EventChannelDidUnmute][0]
			require.Equal(t, []string{"actorId", "channel", "reason", "userIds", "users"}, keysOf(t, ev.Data))

			// The spec's four events, key for key.
			ev = got[chat.EventChannelDidCreate][0]
			require.Equal(t, []string{"channel", "userIds", "users"}, keysOf(t, ev.Data))
			d = eventData(t, ev)
			requireResource(t, "channel", d["channel"], channelFields)
			require.Equal(t, []string{"alice", "bob"}, sortedStrings(t, d["userIds"]))
			require.Equal(t, []string{"alice", "bob"}, idsOf(requireList(t, "user", d["users"], userFields), "userId"))

			ev = got[chat.EventChannelDidAddUsers][0]
			require.Equal(t, []string{"adderId", "channel", "userIds", "users"}, keysOf(t, ev.Data))
			d = eventData(t, ev)
			requireResource(t, "channel", d["channel"], channelFields)
			require.JSONEq(t, `"admin"`, string(d["adderId"]), "adderId is a string")
			require.Equal(t, []string{"carol"}, sortedStrings(t, d["userIds"]))
			require.Equal(t, []string{"admin", "carol"}, idsOf(requireList(t, "user", d["users"], userFields), "userId"), "added users and the adder")

			ev = got[chat.EventChannelDidJoin][0]
			require.Equal(t, []string{"channel", "userIds", "users"}, keysOf(t, ev.Data))
			d = eventData(t, ev)
			requireResource(t, "channel", d["channel"], channelFields)
			require.Equal(t, []string{"admin"}, sortedStrings(t, d["userIds"]))
			require.Equal(t, []string{"admin"}, idsOf(requireList(t, "user", d["users"], userFields), "userId"))

			ev = got[chat.EventMessageDidCreate][0]
			require.Equal(t, []string{"messages", "users"}, keysOf(t, ev.Data))
			d = eventData(t, ev)
			msgs := requireList(t, "message", d["messages"], messageFields)
			require.Len(t, msgs, 1)
			require.Equal(t, mid, msgs[0]["messageId"])
			require.Equal(t, map[string]any{"text": "hello"}, msgs[0]["data"])
			require.Equal(t, []string{"alice"}, idsOf(requireList(t, "user", d["users"], userFields), "userId"), "the author")

			// The extension events: the typed accessors decode them, and
			// they name what the operation did.
			md, err := got[chat.EventMessageDidDelete][0].Message()
			require.NoError(t, err)
			require.Equal(t, mid, md.Messages[0].MessageID)
			require.True(t, md.Messages[0].IsDeleted)
			require.Equal(t, "alice", md.Users[0].UserID)
			md, err = got[chat.EventMessageDidUpdate][0].Message()
			require.NoError(t, err)
			require.Equal(t, mid, md.Messages[0].MessageID)
			require.Equal(t, "hello, edited", md.Messages[0].Data["text"])
			require.NotNil(t, md.Messages[0].EditedAt)
			require.Equal(t, "alice", md.Users[0].UserID, "users holds the author")
			require.Equal(t, admin, md.EditorID)
			md, err = got[chat.EventMessageDidFlag][0].Message()
			require.NoError(t, err)
			require.Equal(t, mid, md.Messages[0].MessageID)
			require.Equal(t, 1, md.Messages[0].FlagCount)
			require.Equal(t, admin, md.FlaggerID)

			for _, n := range []string{chat.EventReactionDidAdd, chat.EventReactionDidRemove} {
				rd, err := got[n][0].Reaction()
				require.NoError(t, err, n)
				require.Len(t, rd.Reactions, 1, n)
				require.Equal(t, "like", rd.Reactions[0].ReactionName, n)
				require.Equal(t, mid, rd.Reactions[0].ReferenceID, n)
				require.Equal(t, admin, rd.Reactions[0].UserID, n)
				require.Equal(t, mid, rd.Messages[0].MessageID, n)
				require.Equal(t, admin, rd.Users[0].UserID, n)
			}

			channelEv := func(n string) *chat.ChannelEventData {
				cd, err := got[n][0].Channel()
				require.NoError(t, err, n)
				require.Equal(t, "c", cd.Channel.ChannelID, n)
				return cd
			}
			cd := channelEv(chat.EventChannelDidRemoveUsers)
			require.Equal(t, []string{"carol"}, cd.UserIDs)
			require.Equal(t, admin, cd.ActorID)
			cd = channelEv(chat.EventChannelDidBanUsers)
			require.Equal(t, []string{"bob"}, cd.UserIDs)
			cd = channelEv(chat.EventChannelDidUnbanUsers)
			require.Equal(t, []string{"bob"}, cd.UserIDs)
			cd = channelEv(chat.EventChannelDidUpdate)
			require.Equal(t, "Renamed", cd.Channel.DisplayName)
			require.Equal(t, admin, cd.ActorID)
			require.Empty(t, cd.UserIDs)
			cd = channelEv(chat.EventChannelDidClose)
			require.True(t, cd.Channel.IsClosed)
			require.Equal(t, admin, cd.ActorID)
			var mutedChannel, mutedUsers bool
			for _, e := range got[chat.EventChannelDidMute] {
				cd, err := e.Channel()
				require.NoError(t, err)
				require.NotNil(t, cd.MutePeriod)
				if *cd.MutePeriod == 0 {
					continue // the unmutes by hand
				}
				require.EqualValues(t, 60_000, *cd.MutePeriod)
				switch {
				case len(cd.UserIDs) == 0:
					mutedChannel = true
				case len(cd.UserIDs) == 1 && cd.UserIDs[0] == "bob":
					mutedUsers = true
				}
			}
			require.True(t, mutedChannel && mutedUsers, "a channel.didMute for the channel and one for bob")

			ud, err := got[chat.EventUserDidUpdate][0].User()
			require.NoError(t, err)
			require.Equal(t, "alice", ud.Users[0].UserID)
			require.Equal(t, "Alice", ud.Users[0].DisplayName)
			ud, err = got[chat.EventUserDidGlobalBan][0].User()
			require.NoError(t, err)
			require.Equal(t, "carol", ud.Users[0].UserID)
			require.True(t, ud.Users[0].IsGlobalBan)
			ud, err = got[chat.EventUserDidGlobalUnban][0].User()
			require.NoError(t, err)
			require.Equal(t, "carol", ud.Users[0].UserID)
			require.False(t, ud.Users[0].IsGlobalBan)

			// The filtered webhook got only what it asked for, and each of
			// those once.
			someGot := some.byName()
			require.Len(t, someGot, 2, "only the filtered events: %v", someGot)
			require.Len(t, someGot[chat.EventChannelDidCreate], 1)
			require.Len(t, someGot[chat.EventReactionDidAdd], 1)
			require.Equal(t, hSome.WebhookID, someGot[chat.EventChannelDidCreate][0].WebhookID)
		})
	}
}

// A webhook disabled by a 410 is enabled again by rotating its secret (as
// the API reference says): the next event is delivered, signed with the new
// secret.
func TestRotateSecretReenables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memoryBackend.open(t)
	svc := adminService(t, s)

	sink := newEventSink(t)
	var gone sync.Mutex
	goneOn := true
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gone.Lock()
		g := goneOn
		gone.Unlock()
		if g {
			http.Error(w, "gone", http.StatusGone)
			return
		}
		sink.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	h, err := svc.CreateWebhook(ctx, "admin", front.URL, nil)
	require.NoError(t, err)
	start(t, s, testConfig(func(c *Config) { c.PollInterval = 20 * time.Millisecond }))

	_, err = svc.CreateChannel(ctx, "admin", chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		l, err := svc.ListWebhooks(ctx, "admin")
		return err == nil && len(l.Webhooks) == 1 && l.Webhooks[0].IsDisabled
	}, patience, 10*time.Millisecond, "a 410 disables the webhook")

	gone.Lock()
	goneOn = false
	gone.Unlock()
	rotated, err := svc.RotateWebhookSecret(ctx, "admin", h.WebhookID)
	require.NoError(t, err)
	require.False(t, rotated.IsDisabled, "rotating re-enables")
	require.Empty(t, rotated.DisabledReason)
	l, err := svc.ListWebhooks(ctx, "admin")
	require.NoError(t, err)
	require.False(t, l.Webhooks[0].IsDisabled)
	sink.setSecret(rotated.Secret)

	_, err = svc.CreateChannel(ctx, "admin", chat.CreateChannelInput{ChannelID: "d", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(sink.byName()[chat.EventChannelDidCreate]) == 1 },
		patience, 10*time.Millisecond, "the next event is delivered with the new secret")
	cd, err := sink.byName()[chat.EventChannelDidCreate][0].Channel()
	require.NoError(t, err)
	require.Equal(t, "d", cd.Channel.ChannelID)
}

// adminService returns a Service over s with an admin account, as the
// example server has after its first start.
func adminService(t *testing.T, s chat.Store) *chat.Service {
	t.Helper()
	ctx := context.Background()
	svc, err := chat.New(ctx, s, chat.Config{Logger: testLogger()})
	require.NoError(t, err)
	_, _, err = svc.CreateAdmin(ctx, "", "root", "admin")
	require.NoError(t, err)
	return svc
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
