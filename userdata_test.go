package chat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// countingViews counts the read-only transactions run on a store.
type countingViews struct {
	chat.Store
	views atomic.Int64
}

func (c *countingViews) View(ctx context.Context, fn func(tx chat.Tx) error) error {
	c.views.Add(1)
	return c.Store.View(ctx, fn)
}

// firstWrite records how many transactions had run when the export's
// first bytes were written.
type firstWrite struct {
	bytes.Buffer
	st    *countingViews
	atGot int64
}

func (w *firstWrite) Write(b []byte) (int, error) {
	if w.Len() == 0 {
		w.atGot = w.st.views.Load()
	}
	return w.Buffer.Write(b)
}

// The export is streamed: its first bytes are written while pages are
// still to be read (a document built whole before writing would write
// only after the last read), and the document is complete and valid.
func TestExportStreams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &countingViews{Store: memory.New()}
	svc, err := chat.New(ctx, st, chat.Config{PurgeBatch: 5})
	require.NoError(t, err)
	_, _, err = svc.CreateAdmin(ctx, "", "root", "root")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, "root", chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"u"}})
	require.NoError(t, err)
	long := strings.Repeat("words to export ", 200) // 3,200 bytes
	const n = 60                                    // 12 pages, about 190 KB
	for range n {
		_, err := svc.CreateMessage(ctx, "u", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData(long)})
		require.NoError(t, err)
	}
	w := &firstWrite{st: st}
	before := st.views.Load()
	require.NoError(t, svc.ExportUser(ctx, "root", "u", w))
	total := st.views.Load() - before
	require.Less(t, w.atGot-before, total/2, "the first bytes left before half the pages were read")
	var doc struct {
		Messages []chat.Message `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(w.Bytes(), &doc))
	require.Len(t, doc.Messages, n)

	// A refusal writes nothing.
	var empty bytes.Buffer
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(svc.ExportUser(ctx, "root", "nobody", &empty)))
	require.Equal(t, chat.CodePermissionDenied, chat.ErrorCode(svc.ExportUser(ctx, "u", "u", &empty)))
	require.Zero(t, empty.Len())
}
