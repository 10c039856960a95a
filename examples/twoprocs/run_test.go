package twoprocs

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/internal/pgtest"
)

// TestRunScript runs run.sh against the test database and checks what it
// reports: both processes served, the message posted through A was read
// through B's API and arrived on B's event stream (the same message id all
// three times), both processes exited with status 0, and afterwards none
// of them is left running.
func TestRunScript(t *testing.T) {
	url := pgtest.URL(t)
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("run.sh needs %s: %v", tool, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "run.sh")
	cmd.Env = append(os.Environ(), "POSTGRES_URL="+url)
	out, err := cmd.CombinedOutput()
	text := string(out)
	require.NoError(t, err, text)

	pids := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^(A|B): pid (\d+) serving http://127\.0\.0\.1:\d+$`).FindAllStringSubmatch(text, -1) {
		pid, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		pids[m[1]] = pid
	}
	require.Len(t, pids, 2, text)
	require.NotEqual(t, pids["A"], pids["B"], "two processes")

	posted := regexp.MustCompile(`(?m)^A: alice posted message ([0-9a-f]{24}): (hello from A \d+)$`).FindStringSubmatch(text)
	require.NotNil(t, posted, text)
	id, msg := posted[1], posted[2]
	require.Contains(t, text, "\nB API: message "+id+" by alice: "+msg+"\n")
	require.Contains(t, text, "\nB stream: message.didCreate "+id+": "+msg+"\n")
	require.Contains(t, text, "\nA: exited with status 0\n")
	require.Contains(t, text, "\nB: exited with status 0\n")
	require.True(t, strings.HasSuffix(text, "OK: a message posted through A was read through B's API and received live on B's event stream\n"), text)

	for name, pid := range pids {
		err := syscall.Kill(pid, 0)
		require.ErrorIs(t, err, syscall.ESRCH, "process %s (pid %d) still exists", name, pid)
	}
}
