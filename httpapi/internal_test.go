package httpapi

import (
	"time"

	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

func TestDecodeFormTree(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want map[string]any
	}{
		{"a=1", map[string]any{"a": formValue("1")}},
		{"a=1&a=2", map[string]any{"a": []any{formValue("1"), formValue("2")}}},
		{"a[]=1&a[]=2", map[string]any{"a": []any{formValue("1"), formValue("2")}}},
		{"a[2]=z&a[0]=x&a[1]=y", map[string]any{"a": []any{formValue("x"), formValue("y"), formValue("z")}}},
		{"o[k]=1&o[j][x]=2", map[string]any{"o": map[string]any{"k": formValue("1"), "j": map[string]any{"x": formValue("2")}}}},
		{"o[l][]=1&o[l][]=2", map[string]any{"o": map[string]any{"l": []any{formValue("1"), formValue("2")}}}},
		{"a[0][n]=1&a[1][n]=2", map[string]any{"a": []any{map[string]any{"n": formValue("1")}, map[string]any{"n": formValue("2")}}}},
		{"weird[=1&x]=2&[]=3", map[string]any{"weird[": formValue("1"), "x]": formValue("2"), "[]": formValue("3")}},
		{"a[b]c=1", map[string]any{"a[b]c": formValue("1")}},
		{"", map[string]any{}},
	}
	for _, c := range cases {
		got, err := decodeForm(c.in, "body")
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
	_, err := decodeForm("a=1&a[k]=2", "body")
	require.ErrorIs(t, err, chat.ErrBadRequest)
	_, err = decodeForm("a[0]=1&a[k]=2", "body")
	require.ErrorIs(t, err, chat.ErrBadRequest)
}

func TestParamsAccessors(t *testing.T) {
	t.Parallel()
	form, err := decodeForm("s=x&l[]=a&l[]=b&j=%5B%22c%22%5D&lit=%5Bnot+json&e=&n=42&f=1e2&b=TRUE&o[k]=1&oj=%7B%22k%22%3A2%7D", "body")
	require.NoError(t, err)
	p := newParams(form)
	require.Equal(t, "x", p.str("s"))
	require.Equal(t, []string{"a", "b"}, p.strs("l"))
	require.Equal(t, []string{"c"}, p.strs("j"))
	require.Equal(t, []string{"[not json"}, p.strs("lit"))
	require.Equal(t, []string{}, p.strs("e"))
	require.Nil(t, p.strs("absent"))
	require.Nil(t, p.strsPtr("absent"))
	require.Equal(t, 42, p.integer("n"))
	require.Nil(t, p.int64Ptr("e"), "an empty form value is absent")
	require.True(t, p.boolean("b"))
	require.Equal(t, map[string]any{"k": "1"}, p.object("o"))
	require.Equal(t, map[string]any{"k": float64(2)}, p.object("oj"))
	require.Equal(t, 2, p.sub("oj").integer("k"))
	require.NoError(t, p.Err())
	_ = p.integer("f")
	require.ErrorContains(t, p.Err(), "f: must be an integer", "decimal only in forms")

	js, err := decodeJSON([]byte(`{"n":10.0,"big":1e2,"s":"x","b":false,"nul":null,"o":{"k":[1,"a"]}}`))
	require.NoError(t, err)
	p = newParams(js)
	require.Equal(t, 10, p.integer("n"))
	require.Equal(t, 100, p.integer("big"))
	require.False(t, p.has("nul"))
	require.Nil(t, p.strPtr("nul"))
	require.Equal(t, map[string]any{"k": []any{float64(1), "a"}}, p.object("o"))
	require.NoError(t, p.Err())
	// The first error wins and names the nested field.
	_ = p.sub("o").str("k")
	_ = p.str("n")
	require.EqualError(t, p.Err(), "o.k: must be a string")
}

// TestStatusTable checks the one table against docs/api.md section 1 (Errors),
// including the codes the admin API cannot produce over HTTP (400302,
// 400303 and 400311: admins are never muted nor held by slow mode).
func TestStatusTable(t *testing.T) {
	t.Parallel()
	want := map[chat.Code]int{
		400000: 400, 400001: 400, 400100: 401, 400300: 403, 400301: 403, 400302: 403,
		400303: 403, 400304: 403, 400308: 403, 400309: 403, 400311: 429, 400312: 403, 400313: 403,
		400400: 404, 400900: 409, 400413: 413, 400415: 415, 500000: 500, 500300: 503,
	}
	require.Equal(t, want, statusOf)
	h := &handler{log: slog.New(slog.DiscardHandler)}
	for code, status := range want {
		rec := httptest.NewRecorder()
		h.writeError(rec, httptest.NewRequest("GET", "/", nil), &chat.Error{Code: code, Message: "m", Detail: []chat.Detail{chat.RawDetail(`"d"`)}})
		require.Equal(t, status, rec.Code, code)
		var body map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		require.EqualValues(t, code, body["code"])
		require.Equal(t, "error", body["status"])
		if status < 500 {
			require.Equal(t, "m", body["message"])
			require.Equal(t, map[string]any{"detail": []any{"d"}}, body["data"])
		} else {
			require.NotEqual(t, "m", body["message"])
			require.Equal(t, map[string]any{"detail": []any{}}, body["data"])
		}
		if code == chat.CodeRateLimited {
			require.Equal(t, "1", rec.Header().Get("Retry-After"))
		}
	}
	// A slow-mode refusal's Retry-After is its detail's retryAfter.
	rec := httptest.NewRecorder()
	h.writeError(rec, httptest.NewRequest("POST", "/message", nil), &chat.Error{Code: chat.CodeRateLimited, Message: "slow mode",
		Detail: []chat.Detail{chat.RetryAfter{Wait: 5200 * time.Millisecond}}})
	require.Equal(t, 429, rec.Code)
	require.Equal(t, "6", rec.Header().Get("Retry-After"))
	// Unknown codes and plain errors are 500000.
	rec = httptest.NewRecorder()
	h.writeError(rec, httptest.NewRequest("GET", "/", nil), &chat.Error{Code: 123})
	require.Equal(t, 500, rec.Code)
	require.Contains(t, rec.Body.String(), `"code":500000`)
	rec = httptest.NewRecorder()
	h.writeError(rec, httptest.NewRequest("GET", "/", nil), errors.New("secret"))
	require.Equal(t, 500, rec.Code)
	require.NotContains(t, rec.Body.String(), "secret")
}

// TestRecoverPanic checks that a panic becomes a logged 500000.
func TestRecoverPanic(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	h := &handler{log: slog.New(slog.NewTextHandler(&logs, nil))}
	boom := h.requestID(h.recoverPanic(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom at 0xdead") })))
	rec := httptest.NewRecorder()
	boom.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	require.Equal(t, 500, rec.Code)
	require.Contains(t, rec.Body.String(), `"code":500000`)
	require.NotContains(t, rec.Body.String(), "boom")
	require.Contains(t, logs.String(), "boom at 0xdead")
	require.Contains(t, logs.String(), rec.Header().Get("X-Request-Id"))

	// http.ErrAbortHandler is re-panicked for net/http to handle.
	abort := h.recoverPanic(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	require.PanicsWithValue(t, http.ErrAbortHandler, func() {
		abort.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
	})
}

func TestContentDisposition(t *testing.T) {
	t.Parallel()
	require.Equal(t, `attachment; filename="a b.txt"; filename*=UTF-8''a%20b.txt`, contentDisposition("attachment", "a b.txt"))
	require.Equal(t, `inline; filename="_.png"; filename*=UTF-8''%E7%8C%AB.png`, contentDisposition("inline", "猫.png"))
	require.Equal(t, `attachment; filename="_x_y_"; filename*=UTF-8''%22x%5Cy%25`, contentDisposition("attachment", `"x\y%`))
	require.Equal(t, "photo.jpg", withExtension("photo.png", "image/jpeg"))
	require.Equal(t, "photo.png", withExtension("photo", "image/png"))
	require.Equal(t, "photo.gif", withExtension("photo.gif", "image/gif"))
	require.Equal(t, "text/plain; charset=UTF-8", fileContentType("Text/Plain; Charset=UTF-8", nil))
	require.Equal(t, "text/plain; charset=utf-8", fileContentType("application/octet-stream", []byte("hello")))
	require.Equal(t, "application/pdf", fileContentType("nonsense", []byte("%PDF-1.7")))
}

// TestDecodeJSONBody checks what a JSON body may hold around its object
// and which field an invalid UTF-8 byte is reported under.
func TestDecodeJSONBody(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{` {"a":1} `, "{\"a\":1}\n\t\r", `{"a":"\u00e9","b":"é"}`} {
		_, err := decodeJSON([]byte(ok))
		require.NoError(t, err, "%q", ok)
	}
	for in, want := range map[string]string{
		`{"a":1}{}`:  "body: invalid JSON: unexpected data after the object",
		`{"a":1} x`:  "body: invalid JSON: unexpected data after the object",
		`{"a":1} []`: "body: invalid JSON: unexpected data after the object",
		`[1]`:        "body: must be a JSON object",
		`{"a":1`:     "body: invalid JSON: unexpected end of input",
	} {
		_, err := decodeJSON([]byte(in))
		require.EqualError(t, err, want, "%q", in)
	}
	for in, want := range map[string]string{
		"{\"a\":\"\xff\"}":                                 "a: must be valid UTF-8",
		"{\"a\":[1,{\"b\":[true,\"x\xfe\"]}]}":             "a[1].b[1]: must be valid UTF-8",
		"{\"a\":{\"\xff\":1}}":                             "a: keys must be valid UTF-8",
		"{\"\xff\":1}":                                     "body: keys must be valid UTF-8",
		"{\"ok\":\"é\",\"b\":{\"c\":null,\"d\":\"\xc3\"}}": "b.d: must be valid UTF-8",
	} {
		_, err := decodeJSON([]byte(in))
		require.EqualError(t, err, want, "%q", in)
	}
}
