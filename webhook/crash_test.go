package webhook

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

// Environment of the child process of TestCrashSafety.
const (
	crashChildEnv  = "WEBHOOK_CRASH_CHILD" // SQLite file path
	crashURLEnv    = "WEBHOOK_CRASH_URL"
	crashSecretEnv = "WEBHOOK_CRASH_SECRET"
	crashEvents    = 5
)

// TestCrashSafety: a process commits deliveries to a SQLite file and starts
// delivering them to a receiver that is down (503), then is killed with
// SIGKILL, holding leases. A new dispatcher on the same file delivers every
// event once the receiver is up, and the attempts made before the crash are
// still recorded.
func TestCrashSafety(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(t, path)
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	var down atomic.Bool
	down.Store(true)
	const secret = "crash-secret"
	rc := newReceiver(t, secret, func(w http.ResponseWriter, r *http.Request, _ string, _ int) bool {
		if down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	path := filepath.Join(t.TempDir(), "chat.db")

	sc, kill := startChild(t, "TestCrashSafety", crashChildEnv+"="+path, crashURLEnv+"="+rc.URL+"/hook", crashSecretEnv+"="+secret)

	var ids []string
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 && f[0] == "committed" {
			ids = f[1:]
			break
		}
	}
	require.Len(t, ids, crashEvents, "the child reports its committed deliveries")
	// Let the child try (and fail) every event, and retry one (so at least
	// one attempt is recorded), then kill it, probably mid-flight.
	require.Eventually(t, func() bool { return rc.hitCount() > crashEvents }, patience, time.Millisecond)
	kill() // SIGKILL: no cleanup, no Stop
	before := rc.hitCount()

	down.Store(false)
	s := openSQLite(t, path)
	start(t, s, testConfig(func(c *Config) { c.PollInterval = 50 * time.Millisecond }))
	states := waitStates(t, s, ids)
	for _, id := range ids {
		require.Equal(t, chat.DeliveryDelivered, states[id].State)
		require.Equal(t, 1, rc.deliveredCount(id), "verified and delivered once")
	}
	// Every attempt before the last one failed, and was made by the child
	// (the receiver was down until it was killed): a 503, or a timeout
	// when the child's 500 ms request timeout ran out on a loaded machine.
	var recordedByChild int
	for _, id := range ids {
		_, as := getDelivery(t, s, id)
		for _, a := range as[:len(as)-1] {
			require.Equal(t, id, a.RequestID)
			require.NotEqual(t, http.StatusNoContent, a.StatusCode)
			recordedByChild++
		}
		require.Equal(t, http.StatusNoContent, as[len(as)-1].StatusCode)
	}
	require.Positive(t, recordedByChild, "attempts recorded by the killed process survive")
	require.LessOrEqual(t, recordedByChild, before)
}

// crashChild is the child process: it commits deliveries, reports them,
// and delivers until it is killed.
func crashChild(t *testing.T, path string) {
	s := openSQLite(t, path)
	hook := createHook(t, s, os.Getenv(crashURLEnv), os.Getenv(crashSecretEnv))
	ids := enqueue(t, s, newDeliveries(t, hook.WebhookID, crashEvents))
	fmt.Println("committed", strings.Join(ids, " "))
	d := newDispatcher(t, s, testConfig(func(c *Config) {
		c.Timeout = 500 * time.Millisecond
		c.Lease = time.Second
		c.Schedule = []time.Duration{0, time.Second, time.Second, time.Second}
	}))
	require.NoError(t, d.Start(context.Background()))
	time.Sleep(time.Minute) // killed long before
	t.Fatal("the parent did not kill the child")
}

// Environment of the child process of TestCrashBeforeDelivery.
const (
	crash2ChildEnv = "WEBHOOK_CRASH2_CHILD" // backend name
	crash2WhereEnv = "WEBHOOK_CRASH2_WHERE" // SQLite path or Postgres schema
	crash2URLEnv   = "WEBHOOK_CRASH2_URL"
)

// TestCrashBeforeDelivery: a server process changes data through the
// Service (so each event is committed in the change's transaction), runs no
// dispatcher, and is killed with SIGKILL right after the commits. A new
// process on the same store delivers every event, verified with the
// webhook's secret: nothing committed is lost.
func TestCrashBeforeDelivery(t *testing.T) {
	if name := os.Getenv(crash2ChildEnv); name != "" {
		crash2Child(t, name, os.Getenv(crash2WhereEnv))
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	for _, b := range backends() {
		if b.name == "memory" {
			continue // nothing survives the process
		}
		t.Run(b.name, func(t *testing.T) {
			where := filepath.Join(t.TempDir(), "chat.db")
			if b.name == "postgres" {
				where = randomSchema()
			}
			sink := newEventSink(t)
			sc, kill := startChild(t, "TestCrashBeforeDelivery", crash2ChildEnv+"="+b.name, crash2WhereEnv+"="+where, crash2URLEnv+"="+sink.URL+"/hook")
			var secret string
			var messages int
			for sc.Scan() {
				if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "committed" {
					secret = f[1]
					_, err := fmt.Sscan(f[2], &messages)
					require.NoError(t, err)
					break
				}
			}
			require.NotEmpty(t, secret, "the child reports its commits")
			kill() // SIGKILL: no cleanup, no Stop
			require.Zero(t, len(sink.byName()), "nothing was delivered before the crash")

			var s chat.Store
			if b.name == "postgres" {
				s = openPostgres(t, where, true)
			} else {
				s = openSQLite(t, where)
			}
			sink.setSecret(secret)
			start(t, s, testConfig(func(c *Config) { c.PollInterval = 50 * time.Millisecond }))
			require.Eventually(t, func() bool {
				got := sink.byName()
				return len(got[chat.EventChannelDidCreate]) >= 1 && len(got[chat.EventMessageDidCreate]) >= messages
			}, patience, 10*time.Millisecond)
			got := sink.byName()
			seen := map[string]bool{}
			for _, ev := range got[chat.EventMessageDidCreate] {
				d, err := ev.Message()
				require.NoError(t, err)
				seen[d.Messages[0].MessageID] = true
			}
			require.Len(t, seen, messages, "every committed message event arrived")
		})
	}
}

// crash2Child commits a channel and messages through the Service, reports
// the webhook secret and the number of messages, and waits to be killed.
func crash2Child(t *testing.T, backend, where string) {
	ctx := context.Background()
	var s chat.Store
	if backend == "postgres" {
		s = openPostgres(t, where, false)
	} else {
		s = openSQLite(t, where)
	}
	svc := adminService(t, s)
	h, err := svc.CreateWebhook(ctx, "admin", os.Getenv(crash2URLEnv), nil)
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, "admin", chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	const messages = 5
	for i := range messages {
		_, err := svc.CreateMessage(ctx, "admin", chat.CreateMessageInput{ChannelID: "c", Type: "text", Data: map[string]any{"text": fmt.Sprint("m", i)}})
		require.NoError(t, err)
	}
	fmt.Println("committed", h.Secret, messages)
	time.Sleep(time.Minute) // killed long before
	t.Fatal("the parent did not kill the child")
}

// startChild re-executes the test binary running only the test named, with
// env added, and returns a scanner over its standard output and a function
// that kills it with SIGKILL and waits for it (also run at cleanup if the
// test did not).
func startChild(t *testing.T, test string, env ...string) (*bufio.Scanner, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var once sync.Once
	kill := func() {
		once.Do(func() {
			require.NoError(t, cmd.Process.Kill())
			_ = cmd.Wait()
		})
	}
	t.Cleanup(func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	})
	return bufio.NewScanner(out), kill
}

// Environment of the child process of TestCrashDeferred.
const (
	crash3ChildEnv = "WEBHOOK_CRASH3_CHILD" // SQLite file path
	crash3URLEnv   = "WEBHOOK_CRASH3_URL"
	crash3Messages = 3
)

// TestCrashDeferred: a process posts through a Service whose dispatcher
// takes the deliveries directly, on SQLite, which keeps them with their
// events (chat.DeliveryDeferrer), and is killed with SIGKILL while their
// POSTs are under way: nothing of them is in the outbox. A new process on
// the same file stores them once the dead store's row has lapsed and their
// leases have run out, and delivers each one with the requestId and the
// body of the attempt made before the crash.
func TestCrashDeferred(t *testing.T) {
	if path := os.Getenv(crash3ChildEnv); path != "" {
		crash3Child(t, path)
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	var up atomic.Bool
	var mu sync.Mutex
	before := map[string][]byte{} // requestId -> body, sent before the crash
	rc := newReceiver(t, "k", func(w http.ResponseWriter, r *http.Request, id string, attempt int) bool {
		if up.Load() {
			return false
		}
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		before[id] = body
		mu.Unlock()
		<-r.Context().Done() // held until the child dies
		return true
	})
	path := filepath.Join(t.TempDir(), "chat.db")
	sc, kill := startChild(t, "TestCrashDeferred", crash3ChildEnv+"="+path, crash3URLEnv+"="+rc.URL)
	committed := false
	for sc.Scan() {
		if sc.Text() == "committed" {
			committed = true
			break
		}
	}
	require.True(t, committed, "the child reports its commits")
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(before) == crash3Messages
	}, patience, time.Millisecond, "every delivery is under way")
	kill() // SIGKILL: no cleanup, no Stop, no attempt recorded
	up.Store(true)

	s := openSQLite(t, path)
	require.Empty(t, listDeliveries(t, s), "the deliveries were kept with their events")
	start(t, s, testConfig(func(c *Config) { c.PollInterval = 50 * time.Millisecond }))
	ids := make([]string, 0, crash3Messages)
	for id := range before {
		ids = append(ids, id)
	}
	require.Eventually(t, func() bool { return len(listDeliveries(t, s)) == crash3Messages }, patience, 10*time.Millisecond,
		"stored once the dead store's row lapsed and the leases ran out")
	states := waitStates(t, s, ids)
	for _, id := range ids {
		require.Equal(t, chat.DeliveryDelivered, states[id].State)
		require.Equal(t, 1, rc.deliveredCount(id), "delivered once after the crash")
		hs := rc.hitsOf(id)
		require.Len(t, hs, 2, "the attempt before the crash and the one after")
		require.Equal(t, string(before[id]), string(hs[1].body), "the same body")
		require.Equal(t, string(before[id]), string(states[id].Body))
	}
}

// crash3Child posts through a Service with a direct dispatcher that has
// caught up, reports the commits and waits to be killed.
func crash3Child(t *testing.T, path string) {
	s := openSQLite(t, path)
	rc := &testReceiver{Server: &httptest.Server{URL: os.Getenv(crash3URLEnv)}}
	svc, d := directSetup(t, s, rc, testConfig(func(c *Config) {
		c.Timeout, c.Lease, c.PollInterval = 2*time.Second, 3*time.Second, time.Hour
	}))
	require.Eventually(t, d.direct.Load, patience, time.Millisecond, "the first claim caught up")
	for range crash3Messages {
		require.NoError(t, post(t, svc, "deferred"))
	}
	require.Empty(t, listDeliveries(t, s), "taken directly: kept with the events")
	fmt.Println("committed")
	time.Sleep(time.Minute) // killed long before
	t.Fatal("the parent did not kill the child")
}
