package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServePanelAnswersUnreadPost: through the server's own middleware (the
// metrics wrapper) and its 5-minute read timeout, a POST to the panel
// without a session whose body never arrives is answered, and its
// connection closed, without the body.
func TestServePanelAnswersUnreadPost(t *testing.T) {
	t.Parallel()
	s := start(t, "-store", "memory")
	addr := strings.TrimPrefix(s.base, "http://")
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	// Only so that a regression fails instead of hanging for the read
	// timeout; the answer does not wait for anything.
	require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
	_, err = fmt.Fprintf(conn, "POST /admin/channels HTTP/1.1\r\nHost: %s\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n", addr)
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, err = io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the server closed the connection")
}
