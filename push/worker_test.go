package push

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// chatEnv is a Service over a memory store with a settable clock.
type chatEnv struct {
	t     *testing.T
	ctx   context.Context
	svc   *chat.Service
	store chat.Store
	clk   *clock
}

func newChatEnv(t *testing.T, members ...string) *chatEnv {
	t.Helper()
	ctx := context.Background()
	st := memory.New()
	clk := newClock()
	svc, err := chat.New(ctx, st, chat.Config{Now: clk.Now, AllowPrivatePush: true})
	require.NoError(t, err)
	a, _, err := svc.CreateAdmin(ctx, "", "root", "")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: "c", Type: "standard", DisplayName: "Lobby", UserIDs: members})
	require.NoError(t, err)
	return &chatEnv{t: t, ctx: ctx, svc: svc, store: st, clk: clk}
}

func (e *chatEnv) register(user, provider, token string) chat.Device {
	e.t.Helper()
	dl, err := e.svc.RegisterDevice(e.ctx, user, chat.RegisterDeviceInput{UserID: user, Provider: provider, Token: token})
	require.NoError(e.t, err)
	return dl.Devices[0]
}

func (e *chatEnv) post(user, text string) string {
	e.t.Helper()
	out, err := e.svc.CreateMessage(e.ctx, user, chat.CreateMessageInput{ChannelID: "c", Type: "text", Data: chat.TextData(text)})
	require.NoError(e.t, err)
	return out.Messages[0].MessageID
}

func (e *chatEnv) pushes(messageID string) []*chat.PushDelivery {
	e.t.Helper()
	var out []*chat.PushDelivery
	// The batches written with the messages become pushes first.
	require.NoError(e.t, e.store.Update(e.ctx, func(tx chat.Tx) error {
		if _, err := tx.ExpandPushBatches(e.ctx, 0); err != nil {
			return err
		}
		var err error
		out, err = tx.ListPushes(e.ctx, messageID)
		return err
	}))
	return out
}

func (e *chatEnv) devices(user string) []string {
	e.t.Helper()
	dl, err := e.svc.ListDevices(e.ctx, user, user)
	require.NoError(e.t, err)
	out := []string{}
	for _, d := range dl.Devices {
		out = append(out, d.DeviceID)
	}
	return out
}

// results counts OnResult calls by provider and result.
type results struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *results) add(provider, result string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[provider+" "+result]++
}

func (r *results) get() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// A message reaches each device through its provider's stand-in, which
// checks what the real service checks; a device the provider reports as
// gone (APNs 410, FCM UNREGISTERED, Web Push 410) is removed with its
// pushes, the others keep theirs.
func TestWorkerDeliversThroughProvidersAndRemovesGoneDevices(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, "ann", "bob", "cat")
	apns, apnsIn, _ := newAPNs(t, true)
	fcm, fcmIn := newFCM(t)
	wp, wpIn, wpURL := newWebPush(t)

	okAPNs, goneAPNs := fmt.Sprintf("%064x", 1), fmt.Sprintf("%064x", 2)
	apnsIn.answers[goneAPNs] = func(w http.ResponseWriter) { apnsIn.reason(w, http.StatusGone, "Unregistered") }
	fcmIn.answers["gone-fcm"] = func(w http.ResponseWriter) {
		rpcError(w, http.StatusNotFound, "NOT_FOUND", "UNREGISTERED", "")
	}
	bobWeb := e.register("bob", chat.ProviderWebPush, wpIn.subscription(wpURL+"/ok"))
	bobGoneWeb := e.register("bob", chat.ProviderWebPush, wpIn.subscription(wpURL+"/gone"))
	catAPNs := e.register("cat", chat.ProviderAPN, okAPNs)
	e.register("cat", chat.ProviderAPN, goneAPNs)
	catFCM := e.register("cat", chat.ProviderFirebase, "ok-fcm")
	e.register("cat", chat.ProviderFirebase, "gone-fcm")
	e.register("ann", chat.ProviderFirebase, "ann-fcm")

	m := e.post("ann", "hello")
	require.Len(t, e.pushes(m), 6, "one per device of bob and cat, none for the author")
	var rs results
	w := NewWorker(e.store, Mux{APNs: apns, FCM: fcm, WebPush: wp}, WorkerConfig{Now: e.clk.Now, OnResult: rs.add})
	n, err := w.RunOnce(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 6, n)
	apnsIn.check()
	fcmIn.check()
	wpIn.check()

	require.Equal(t, []string{bobWeb.DeviceID}, e.devices("bob"))
	require.ElementsMatch(t, []string{catAPNs.DeviceID, catFCM.DeviceID}, e.devices("cat"))
	ps := e.pushes(m)
	require.Len(t, ps, 3, "the gone devices' pushes went with them")
	for _, p := range ps {
		require.Equal(t, chat.DeliveryDelivered, p.State, p.DeviceID)
		require.Equal(t, 1, p.Attempts)
		require.NotEqual(t, bobGoneWeb.DeviceID, p.DeviceID)
	}
	require.Equal(t, map[string]int{"apn delivered": 1, "apn gone": 1, "firebase delivered": 1, "firebase gone": 1,
		"webpush delivered": 1, "webpush gone": 1}, rs.get())

	// What each provider was given: title, body and the message's ids.
	var got struct {
		Title, Body string
		Data        map[string]string
	}
	require.Len(t, wpIn.received, 2)
	require.NoError(t, json.Unmarshal(wpIn.received[0], &got))
	require.Equal(t, "Lobby", got.Title)
	require.Equal(t, "ann: hello", got.Body)
	require.Equal(t, map[string]string{"channelId": "c", "messageId": m}, got.Data)
	require.Len(t, apnsIn.payloads, 2)
	require.Equal(t, map[string]any{"title": "Lobby", "body": "ann: hello"}, apnsIn.payloads[0]["aps"].(map[string]any)["alert"])
	require.Equal(t, m, apnsIn.payloads[0]["messageId"])
	require.Len(t, fcmIn.messages, 2)
	require.Equal(t, map[string]string{"channelId": "c", "messageId": m}, fcmIn.messages[0]["data"])

	n, err = w.RunOnce(e.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "delivered pushes are not sent again")
}

// While the provider is down, pushes are retried on the schedule (and no
// sooner than Retry-After); when it is back, every one is delivered
// once. A push still failing after its last attempt is failed.
func TestWorkerRetriesOutageWithBackoffAndLosesNothing(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, "ann", "cat")
	apns, apnsIn, _ := newAPNs(t, true)
	dev, other := fmt.Sprintf("%064x", 7), fmt.Sprintf("%064x", 8)
	down := func(w http.ResponseWriter) { apnsIn.reason(w, http.StatusServiceUnavailable, "ServiceUnavailable") }
	apnsIn.mu.Lock()
	apnsIn.answers[dev] = down
	apnsIn.mu.Unlock()
	e.register("cat", chat.ProviderAPN, dev)
	var ms []string
	for i := range 3 {
		ms = append(ms, e.post("ann", fmt.Sprintf("m%d", i)))
	}
	sched := []time.Duration{0, 5 * time.Second, 30 * time.Second, time.Minute}
	var rs results
	w := NewWorker(e.store, apns, WorkerConfig{Now: e.clk.Now, Schedule: sched, Jitter: -1, OnResult: rs.add, BatchSize: 2})
	run := func() int {
		total := 0
		for {
			n, err := w.RunOnce(e.ctx)
			require.NoError(t, err)
			total += n
			if n < 2 {
				return total
			}
		}
	}
	start := e.clk.Now()
	require.Equal(t, 3, run())
	for _, m := range ms {
		p := e.pushes(m)[0]
		require.Equal(t, chat.DeliveryPending, p.State)
		require.Equal(t, 1, p.Attempts)
		require.Equal(t, start.Add(5*time.Second), p.NextAttemptAt.Time, "the schedule's first retry")
		require.Contains(t, p.LastError, "ServiceUnavailable")
	}
	e.clk.Add(4 * time.Second)
	require.Zero(t, run(), "not before the retry is due")
	e.clk.Add(time.Second)
	require.Equal(t, 3, run())
	require.Equal(t, e.clk.Now().Add(30*time.Second), e.pushes(ms[0])[0].NextAttemptAt.Time, "backoff grows")

	// The provider is back.
	apnsIn.mu.Lock()
	delete(apnsIn.answers, dev)
	apnsIn.mu.Unlock()
	e.clk.Add(30 * time.Second)
	require.Equal(t, 3, run())
	for _, m := range ms {
		p := e.pushes(m)[0]
		require.Equal(t, chat.DeliveryDelivered, p.State)
		require.Equal(t, 3, p.Attempts)
	}
	require.Equal(t, map[string]int{"apn retry": 6, "apn delivered": 3}, rs.get())

	// A push that fails every attempt is given up after the last.
	apnsIn.mu.Lock()
	apnsIn.answers[other] = func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", "600")
		apnsIn.reason(w, http.StatusTooManyRequests, "TooManyRequests")
	}
	apnsIn.mu.Unlock()
	e.register("cat", chat.ProviderAPN, other)
	m := e.post("ann", "late")
	p := func() *chat.PushDelivery {
		for _, p := range e.pushes(m) {
			if p.DeviceID != e.pushes(ms[0])[0].DeviceID {
				return p
			}
		}
		return nil
	}
	require.Equal(t, 2, run())
	require.Equal(t, e.clk.Now().Add(10*time.Minute), p().NextAttemptAt.Time, "Retry-After beyond the schedule's delay")
	for range 3 {
		e.clk.Add(10 * time.Minute)
		require.Equal(t, 1, run())
	}
	require.Equal(t, chat.DeliveryFailed, p().State)
	require.Equal(t, 4, p().Attempts)
	apnsIn.check()
}

// Started, the worker sends what the Service's OnPush wakes it for, and
// Stop waits for it.
func TestWorkerStartStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	wp, wpIn, wpURL := newWebPush(t)
	var w *Worker
	svc, err := chat.New(ctx, st, chat.Config{AllowPrivatePush: true, OnPush: func() { w.Wake() }})
	require.NoError(t, err)
	a, _, err := svc.CreateAdmin(ctx, "", "root", "")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: "c", Type: "standard", UserIDs: []string{"ann", "bob"}})
	require.NoError(t, err)
	_, err = svc.RegisterDevice(ctx, "bob", chat.RegisterDeviceInput{UserID: "bob", Provider: chat.ProviderWebPush, Token: wpIn.subscription(wpURL + "/ok")})
	require.NoError(t, err)
	delivered := make(chan string, 1)
	w = NewWorker(st, wp, WorkerConfig{PollInterval: time.Hour, OnResult: func(_, r string) { delivered <- r }})
	require.NoError(t, w.Start(ctx))
	require.Error(t, w.Start(ctx), "started twice")
	_, err = svc.CreateMessage(ctx, "ann", chat.CreateMessageInput{ChannelID: "c", Type: "text", Data: chat.TextData("hi")})
	require.NoError(t, err)
	require.Equal(t, ResultDelivered, <-delivered, "woken by the commit, not by the hour-long poll")
	require.NoError(t, w.Stop(ctx))
	require.NoError(t, w.Stop(ctx), "idempotent")
	wpIn.check()
	require.Len(t, wpIn.received, 1)
}

// Delivered and failed pushes stay in the log for Retention, then the
// worker deletes them; pending ones stay.
func TestWorkerPrunesOldPushes(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, "ann", "bob")
	wp, wpIn, wpURL := newWebPush(t)
	e.register("bob", chat.ProviderWebPush, wpIn.subscription(wpURL+"/ok"))
	e.register("bob", chat.ProviderWebPush, wpIn.subscription(wpURL+"/busy"))
	m := e.post("ann", "hi")
	w := NewWorker(e.store, wp, WorkerConfig{Now: e.clk.Now, Retention: time.Hour, Jitter: -1,
		Schedule: []time.Duration{0, 2 * time.Hour}})
	n, err := w.RunOnce(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	e.clk.Add(59 * time.Minute)
	w.prune(e.ctx)
	require.Len(t, e.pushes(m), 2, "within the retention")
	e.clk.Add(2 * time.Minute)
	w.prune(e.ctx)
	ps := e.pushes(m)
	require.Len(t, ps, 1, "the delivered push is gone")
	require.Equal(t, chat.DeliveryPending, ps[0].State, "the one waiting for its retry stays")
}
