package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/memory"
)

// pagingFixture is a deterministic API (fixed paging key, clock and ids,
// so its tokens are the same on every run) with seven channels and seven
// users, and the responses of every page reachable from the first ones.
type pagingFixture struct {
	h     http.Handler
	token string
	// pages maps each reachable token to the body of its page, per endpoint.
	channelPages map[string]string
	userPages    map[string]string
}

func newPagingFixture(tb testing.TB) *pagingFixture {
	tb.Helper()
	start := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	var tick, ids atomic.Int64
	svc, err := chat.New(context.Background(), memory.New(), chat.Config{
		PagingKey: []byte("fuzz-paging-key-0123456789abcdef"),
		Now:       func() time.Time { return start.Add(time.Duration(tick.Add(1)) * time.Second) },
		NewID:     func() string { return fmt.Sprintf("id%06d", ids.Add(1)) },
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		tb.Fatal(err)
	}
	_, token, err := svc.CreateAdmin(context.Background(), "", "root", "admin")
	if err != nil {
		tb.Fatal(err)
	}
	for i := range 7 {
		if _, err := svc.CreateChannel(context.Background(), "admin", chat.CreateChannelInput{
			ChannelID: fmt.Sprintf("c%d", i), Type: "standard", UserIDs: []string{fmt.Sprintf("u%d", i)},
		}); err != nil {
			tb.Fatal(err)
		}
	}
	f := &pagingFixture{h: httpapi.New(svc, httpapi.Config{Logger: slog.New(slog.DiscardHandler)}), token: token,
		channelPages: map[string]string{}, userPages: map[string]string{}}
	f.walk(tb, f.channels, f.channelPages, `{"options":{"limit":2}}`)
	f.walk(tb, f.users, f.userPages, "")
	return f
}

// walk follows next and previous from the first page, recording bodies.
func (f *pagingFixture) walk(tb testing.TB, get func(string) (int, string), pages map[string]string, first string) {
	queue := []string{first}
	for len(queue) > 0 {
		tok := queue[0]
		queue = queue[1:]
		if _, ok := pages[tok]; ok {
			continue
		}
		status, body := get(tok)
		if status != 200 {
			tb.Fatalf("page %q: %d %s", tok, status, body)
		}
		pages[tok] = body
		var out struct{ Paging chat.Paging }
		_ = json.Unmarshal([]byte(body), &out)
		for _, t := range []string{out.Paging.Next, out.Paging.Previous} {
			if t != "" {
				queue = append(queue, t)
			}
		}
	}
}

func (f *pagingFixture) serve(req *http.Request) (int, string) {
	req.Header.Set("Authorization", "Bearer "+f.token)
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// channels queries POST /channels with a token (or, for the first page,
// the literal JSON body given as tok when it starts with '{').
func (f *pagingFixture) channels(tok string) (int, string) {
	body := tok
	if !strings.HasPrefix(tok, "{") {
		b, _ := json.Marshal(map[string]any{"options": map[string]any{"token": tok}})
		body = string(b)
	}
	req := httptest.NewRequest("POST", "/channels", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return f.serve(req)
}

// users queries GET /users?limit=3&pageToken=tok.
func (f *pagingFixture) users(tok string) (int, string) {
	q := url.Values{"pageToken": {tok}, "limit": {"3"}}
	return f.serve(httptest.NewRequest("GET", "/users?"+q.Encode(), nil))
}

// FuzzPagingToken: a mutated paging token is either refused with 400000
// or (when it decodes to a genuine token, as a non-canonical base64 tail
// can) answers exactly the page of that genuine token; never 500.
func FuzzPagingToken(f *testing.F) {
	fx := newPagingFixture(f)
	for tok := range fx.channelPages {
		if !strings.HasPrefix(tok, "{") {
			f.Add(tok)
		}
	}
	for tok := range fx.userPages {
		f.Add(tok)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		if tok == "" {
			return // no token: the first page
		}
		check := func(name string, status int, body string, pages map[string]string) {
			switch status {
			case 200:
				for _, p := range pages {
					if p == body {
						return
					}
				}
				t.Fatalf("%s: token %q answered a page no genuine token answers: %s", name, tok, body)
			case 400:
				if !strings.Contains(body, `"code":400000`) {
					t.Fatalf("%s: token %q: 400 without 400000: %s", name, tok, body)
				}
			default:
				t.Fatalf("%s: token %q: status %d: %s", name, tok, status, body)
			}
		}
		status, body := fx.channels(tok)
		check("channels", status, body, fx.channelPages)
		status, body = fx.users(tok)
		check("users", status, body, fx.userPages)
	})
}

// TestPagingFixture checks that the fixture is deterministic, so the
// genuine tokens of the checked-in seed corpus
// (testdata/fuzz/FuzzPagingToken/*-valid) stay genuine. Run it with -v to
// list the tokens when the fixture changes.
func TestPagingFixture(t *testing.T) {
	t.Parallel()
	a, b := newPagingFixture(t), newPagingFixture(t)
	if len(a.channelPages) < 4 || len(a.userPages) < 3 {
		t.Fatalf("unexpected pages: %d channel, %d user", len(a.channelPages), len(a.userPages))
	}
	for tok, body := range a.channelPages {
		if b.channelPages[tok] != body {
			t.Fatalf("the fixture is not deterministic: %q", tok)
		}
		t.Logf("channels token %q", tok)
	}
	for tok := range a.userPages {
		t.Logf("users token %q", tok)
	}
}
