package console_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUnauthenticatedPostIsAnsweredUnread: a POST without a session (or
// from another site) is answered before its body is read, and the server
// then closes the connection instead of waiting for the body. The body of
// these requests is announced and never sent: a panel that read it first
// (or waited for it to reuse the connection) would answer or close only at
// its read timeout, which the test server does not even have.
func TestUnauthenticatedPostIsAnsweredUnread(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	for _, tc := range []struct {
		name, extra string
		want        int
	}{
		{"no session", "", http.StatusUnauthorized},
		{"unknown session", "Cookie: chat_admin_session=forged\r\n", http.StatusUnauthorized},
		{"another site", "Origin: https://evil.example\r\n", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", p.srv.Listener.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			// Only so that a broken panel fails the test instead of
			// hanging it; a working one answers without waiting.
			require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
			_, err = fmt.Fprintf(conn, "POST /admin/rules/test HTTP/1.1\r\nHost: %s\r\n"+
				"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 4096\r\n%s\r\n",
				p.srv.Listener.Addr(), tc.extra)
			require.NoError(t, err)
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			require.NoError(t, err, "the answer comes while the body is still missing")
			_, err = io.ReadAll(res.Body)
			require.NoError(t, err)
			require.Equal(t, tc.want, res.StatusCode)
			require.True(t, res.Close, "the answer says the connection closes")
			_, err = br.ReadByte()
			require.ErrorIs(t, err, io.EOF, "the server closed the connection without the body")
		})
	}
}
