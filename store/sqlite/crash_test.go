package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// The crash test re-executes the test binary as a child process (selected
// by this environment variable) that writes through the store and prints
// every acknowledged message id; the parent kills it with SIGKILL.
const (
	crashChildEnv = "CHAT_SQLITE_CRASH_CHILD"
	crashDBEnv    = "CHAT_SQLITE_CRASH_DB"
	crashChannels = 4
	crashWriters  = 8
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		runCrashChild()
		return
	}
	code := m.Run()
	if fixtureDir != "" {
		_ = os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

// crashText is the text a crash-test message with this id must have.
func crashText(id string) string { return "payload of " + id + " " + strings.Repeat("x", len(id)*7) }

// runCrashChild writes messages from several goroutines until it is
// killed, printing "ack <id>" after each Update returns.
func runCrashChild() {
	ctx := context.Background()
	s, err := Open(ctx, os.Getenv(crashDBEnv), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	prefix := os.Getenv(crashChildEnv)
	var wg sync.WaitGroup
	for w := 0; w < crashWriters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch := fmt.Sprintf("c%d", w%crashChannels)
			for i := 0; ; i++ {
				id := fmt.Sprintf("%s-w%d-%d", prefix, w, i)
				err := s.Update(ctx, func(tx chat.Tx) error {
					c, err := tx.NextSegment(ctx, ch, t0)
					if err != nil {
						return err
					}
					now := chat.NewTime(t0)
					m := &chat.Message{MessageID: id, ChannelID: ch, UserID: fmt.Sprintf("u%d", w),
						Type: chat.MessageTypeText, Data: map[string]any{"text": crashText(id)},
						Tags: []string{"t" + id}, ChannelSegment: c.MessageCount, CreatedAt: now, UpdatedAt: now}
					return tx.CreateMessage(ctx, m)
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, "child: update:", err)
					os.Exit(3)
				}
				mu.Lock()
				// An unbuffered write: once it returns, the line is in the
				// pipe and survives the kill.
				_, _ = os.Stdout.WriteString("ack " + id + "\n")
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func TestCrashSafety(t *testing.T) {
	t.Parallel()
	requireCgo(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crash.db")
	s, err := Open(ctx, path, nil)
	require.NoError(t, err)
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		for i := 0; i < crashChannels; i++ {
			if err := tx.CreateChannel(ctx, testChannel(fmt.Sprintf("c%d", i))); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, s.Close())

	var acked []string
	for round := 0; round < 3; round++ {
		killAfter := 50 + rand.IntN(451)
		ids := crashRound(t, path, fmt.Sprintf("r%d", round), killAfter)
		require.GreaterOrEqual(t, len(ids), killAfter)
		acked = append(acked, ids...)
		checkCrashDB(t, path, acked)
	}
}

// crashRound runs one child, kills it after killAfter acknowledgements and
// returns every id it acknowledged before dying.
func crashRound(t *testing.T, path, prefix string, killAfter int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+prefix, crashDBEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var ids []string
	sc := bufio.NewScanner(out)
	killed := false
	for sc.Scan() {
		line := sc.Text()
		id, ok := strings.CutPrefix(line, "ack ")
		require.True(t, ok, "unexpected child output %q", line)
		ids = append(ids, id)
		if !killed && len(ids) >= killAfter {
			require.NoError(t, cmd.Process.Kill()) // SIGKILL
			killed = true
		}
	}
	require.NoError(t, sc.Err())
	err = cmd.Wait()
	require.True(t, killed, "child exited before the kill: %v\n%s", err, stderr.String())
	require.Error(t, err, "the child was killed")
	t.Logf("round %s: killed after %d acks (%d read in total)", prefix, killAfter, len(ids))
	return ids
}

// checkCrashDB reopens the database and checks that every acknowledged
// message is present and intact and that no half-written message exists.
func checkCrashDB(t *testing.T, path string, acked []string) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path, nil)
	require.NoError(t, err)
	defer s.Close()
	var ic string
	require.NoError(t, s.rdb.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&ic))
	require.Equal(t, "ok", ic)
	var fkErrors int
	require.NoError(t, s.rdb.QueryRowContext(ctx, "SELECT count(*) FROM pragma_foreign_key_check").Scan(&fkErrors))
	require.Zero(t, fkErrors)

	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		for start := 0; start < len(acked); start += 500 {
			ids := acked[start:min(start+500, len(acked))]
			ms, err := tx.GetMessages(ctx, ids)
			require.NoError(t, err)
			byID := map[string]*chat.Message{}
			for _, m := range ms {
				byID[m.MessageID] = m
			}
			for _, id := range ids {
				m := byID[id]
				require.NotNil(t, m, "acknowledged message %s is missing", id)
				require.Equal(t, crashText(id), m.Data["text"], "message %s is damaged", id)
				require.Equal(t, []string{"t" + id}, m.Tags)
			}
		}
		total := 0
		for i := 0; i < crashChannels; i++ {
			ch := fmt.Sprintf("c%d", i)
			c, err := tx.GetChannel(ctx, ch)
			require.NoError(t, err)
			ms, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: ch, IncludeDeleted: true})
			require.NoError(t, err)
			var maxSeg int64
			for j, m := range ms {
				require.Equal(t, int64(j+1), m.ChannelSegment, "segments of %s are gapless", ch)
				require.Equal(t, crashText(m.MessageID), m.Data["text"], "message %s is damaged", m.MessageID)
				maxSeg = m.ChannelSegment
			}
			require.Equal(t, c.MessageCount, maxSeg, "messageCount == max(channelSegment) in %s", ch)
			require.Equal(t, c.MessageCount, int64(len(ms)), "messageCount == count of messages in %s", ch)
			total += len(ms)
		}
		var tags int
		require.NoError(t, s.rdb.QueryRowContext(ctx, "SELECT count(*) FROM message_tags").Scan(&tags))
		require.Equal(t, total, tags, "every message has exactly its tag row")
		require.GreaterOrEqual(t, total, len(acked))
		return nil
	}))
}
