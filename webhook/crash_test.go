package webhook

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashSafety$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path, crashURLEnv+"="+rc.URL+"/hook", crashSecretEnv+"="+secret)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	var ids []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 && f[0] == "committed" {
			ids = f[1:]
			break
		}
	}
	require.Len(t, ids, crashEvents, "the child reports its committed deliveries")
	// Let the child try (and fail) every event, and retry one (so at least
	// one attempt is recorded), then kill it, probably mid-flight.
	require.Eventually(t, func() bool { return rc.hitCount() > crashEvents }, 20*time.Second, time.Millisecond)
	require.NoError(t, cmd.Process.Kill()) // SIGKILL: no cleanup, no Stop
	_ = cmd.Wait()
	killed = true
	before := rc.hitCount()

	down.Store(false)
	s := openSQLite(t, path)
	start(t, s, testConfig(func(c *Config) { c.PollInterval = 50 * time.Millisecond }))
	states := waitStates(t, s, ids, 20*time.Second)
	for _, id := range ids {
		require.Equal(t, chat.DeliveryDelivered, states[id].State)
		require.Equal(t, 1, rc.deliveredCount(id), "verified and delivered once")
	}
	var recorded503 int
	for _, id := range ids {
		_, as := getDelivery(t, s, id)
		for _, a := range as {
			require.Equal(t, id, a.RequestID)
			if a.StatusCode == http.StatusServiceUnavailable {
				recorded503++
			}
		}
		require.Equal(t, http.StatusNoContent, as[len(as)-1].StatusCode)
	}
	require.Positive(t, recorded503, "attempts recorded by the killed process survive")
	require.LessOrEqual(t, recorded503, before)
}

// crashChild is the child process: it commits deliveries, reports them,
// and delivers until it is killed.
func crashChild(t *testing.T, path string) {
	s := openSQLite(t, path)
	hook := createHook(t, s, os.Getenv(crashURLEnv), os.Getenv(crashSecretEnv))
	ids := enqueue(t, s, newDeliveries(t, hook.WebhookID, crashEvents))
	fmt.Println("committed", strings.Join(ids, " "))
	d := New(s, testConfig(func(c *Config) {
		c.Timeout = 500 * time.Millisecond
		c.Lease = time.Second
		c.Schedule = []time.Duration{0, time.Second, time.Second, time.Second}
	}))
	require.NoError(t, d.Start(context.Background()))
	time.Sleep(time.Minute) // killed long before
	t.Fatal("the parent did not kill the child")
}
