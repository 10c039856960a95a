package httpapi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHostileInput sends strings that are not valid UTF-8, hold a NUL
// byte or nest too deep, in JSON bodies, form bodies, query strings and
// paths, against every store: each is refused with 400000 naming the
// field, and nothing changes.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	for _, s := range []struct {
		name string
		open storeFactory
	}{{"memory", memoryStore}, {"sqlite", sqliteStore}, {"postgres", postgresStore}} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			if s.name == "sqlite" && testing.Short() {
				t.Skip("the SQLite run is skipped in -short mode")
			}
			runHostile(t, s.open)
		})
	}
}

// nested returns a JSON value nesting an object (or an array) depth times
// around leaf.
func nested(depth int, array bool, leaf string) string {
	open, closing := `{"k":`, `}`
	if array {
		open, closing = `[`, `]`
	}
	return strings.Repeat(open, depth) + leaf + strings.Repeat(closing, depth)
}

func runHostile(t *testing.T, open storeFactory) {
	e := newEnv(t, open)
	const js, form = "application/json", "application/x-www-form-urlencoded"
	setup := []struct{ method, path, body string }{
		{"PUT", "/users", `{"userId":"u1","displayName":"User One","metadata":{"k":"v"}}`},
		{"POST", "/channel", `{"channelId":"c1","type":"standard","displayName":"One","tags":["t1"],"userIds":["u1"],"metadata":{"k":"v"}}`},
		{"POST", "/message", `{"channelId":"c1","type":"text","data":{"text":"hello"},"tags":["t1"]}`},
		{"POST", "/blacklist/records", `{"regexs":["bad"]}`},
		{"POST", "/whitelist/records", `{"regexs":["good.example"]}`},
	}
	for _, s := range setup {
		r := e.do(s.method, s.path, js, s.body)
		require.Equal(t, 200, r.status, "%s %s: %s", s.method, s.path, r.body)
	}
	// state reads everything the requests below could change.
	state := func() string {
		var b strings.Builder
		for _, s := range []struct{ method, path, body string }{
			{"GET", "/users?limit=100", ""},
			{"POST", "/channels", `{"options":{"limit":100}}`},
			{"POST", "/messages", `{"channelId":"c1"}`},
			{"GET", "/blacklist/records", ""},
			{"GET", "/whitelist/records", ""},
		} {
			r := e.do(s.method, s.path, js, s.body)
			require.Equal(t, 200, r.status, "%s %s: %s", s.method, s.path, r.body)
			b.Write(r.body)
		}
		return b.String()
	}
	before := state()
	require.Contains(t, before, `"c1"`)
	require.Contains(t, before, `"hello"`)

	deep := nested(2000, false, `"x"`)
	cases := []struct {
		method, path, contentType, body string
		field                           string // the field the message names
	}{
		// Query strings, paths and form bodies: NUL bytes and invalid UTF-8.
		{"GET", "/users?search=a%00b", "", "", "search"},
		{"GET", "/users?search=%FF", "", "", "search"},
		{"GET", "/users?a%00b=1", "", "", "query string"},
		{"GET", "/blacklist/records?regexs=bad%00", "", "", "regexs"},
		{"GET", "/whitelist/records?regexs=good%00", "", "", "regexs"},
		{"DELETE", "/blacklist/records?ruleIds=bad%00", "", "", "ruleIds"},
		{"DELETE", "/whitelist/records?ruleIds=%FEgood", "", "", "ruleIds"},
		{"DELETE", "/blacklist/records", js, `{"ruleIds":["bad","b\u0000ad"]}`, "ruleIds[1]"},
		{"DELETE", "/whitelist/records", js, "{\"ruleIds\":[\"good.example\",\"\xff\"]}", "ruleIds[1]"},
		{"PUT", "/blacklist/records/a%00b", js, `{"ruleId":"other"}`, "ruleId"},
		{"PUT", "/whitelist/records/a%00b", js, `{"ruleId":"other"}`, "ruleId"},
		{"PUT", "/blacklist/records/bad", js, `{"ruleId":"b\u0000d"}`, "ruleId"},
		{"PUT", "/whitelist/records/good.example", js, "{\"ruleId\":\"\xffgood\"}", "ruleId"},
		{"POST", "/blacklist/records", form, "regexs=ok&regexs=a%00", "regexs"},
		{"GET", "/channel/c%00", "", "", "channelId"},
		{"GET", "/users/%FF", "", "", "userId"},
		{"PUT", "/channel/c1%00", js, `{"displayName":"x"}`, "channelId"},
		{"POST", "/channels", js, `{"tags":["t1","a\u0000"]}`, "tags[1]"},
		{"POST", "/channels", js, `{"excludeTags":["a\u0000"]}`, "excludeTags[0]"},
		{"POST", "/channels", form, "tags=a%00b", "tags"},
		{"POST", "/channels", form, `excludeTags=%5B%22a%5Cu0000%22%5D`, "excludeTags[0]"},
		{"POST", "/messages", js, `{"channelId":"c1","tags":["a\u0000"]}`, "tags[0]"},
		{"POST", "/messages", js, `{"channelId":"c1","excludeTags":["\u0000"]}`, "excludeTags[0]"},
		{"POST", "/messages", js, "{\"channelId\":\"c1\",\"tags\":[\"\xfe\"]}", "tags[0]"},

		// Create a channel: invalid UTF-8 (values and keys), NUL bytes,
		// deep nesting, in JSON and in forms.
		{"POST", "/channel", js, "{\"channelId\":\"\xff\"}", "channelId"},
		{"POST", "/channel", js, "{\"channelId\":\"\xfe\"}", "channelId"},
		{"POST", "/channel", js, "{\"channelId\":\"c2\",\"type\":\"standard\",\"metadata\":{\"k\":[\"ok\",\"\xff\"]}}", "metadata.k[1]"},
		{"POST", "/channel", js, "{\"channelId\":\"c2\",\"type\":\"standard\",\"metadata\":{\"\xff\":1}}", "metadata"},
		{"POST", "/channel", js, "{\"channelId\":\"c2\",\"type\":\"standard\",\"\xffx\":1}", "body"},
		{"POST", "/channel", js, `{"channelId":"c\u0000"}`, "channelId"},
		{"POST", "/channel", js, `{"channelId":"c2","type":"standard","displayName":"a\u0000"}`, "displayName"},
		{"POST", "/channel", js, `{"channelId":"c2","type":"standard","metadata":{"a":{"b":"\u0000"}}}`, "metadata.a.b"},
		{"POST", "/channel", js, `{"channelId":"c2","type":"standard","metadata":{"a\u0000":1}}`, "metadata"},
		{"POST", "/channel", js, `{"channelId":"c2","type":"standard","tags":["\u0000"]}`, "tags[0]"},
		{"POST", "/channel", js, `{"channelId":"c2","type":"standard","metadata":` + deep + `}`, "metadata"},
		{"POST", "/channel", js, `{"channelId":"c2","type":"standard","metadata":` + nested(33, false, `1`) + `}`, "metadata"},
		{"POST", "/channel", js, `{"channelId":"c2","type":"standard","metadata":{"a":` + nested(32, true, `1`) + `}}`, "metadata"},
		{"POST", "/channel", form, "channelId=c2&type=standard&metadata%5Bk%5D=a%00b", "metadata[k]"},
		{"POST", "/channel", form, "channelId=c2&type=standard&metadata=" + strings.ReplaceAll(strings.ReplaceAll(nested(40, false, `1`), "{", "%7B"), "}", "%7D"), "metadata"},
		{"POST", "/channel", form, "channelId=c2&type=standard&metadata=%7B%22k%22%3A%22%5Cu0000%22%7D", "metadata.k"},
		{"POST", "/channel", form, "channelId=%FF", "channelId"},

		// Create a message: text and custom data.
		{"POST", "/message", js, "{\"channelId\":\"c1\",\"type\":\"text\",\"data\":{\"text\":\"\xff\"}}", "data.text"},
		{"POST", "/message", js, `{"channelId":"c1","type":"text","data":{"text":"a\u0000b"}}`, "data.text"},
		{"POST", "/message", js, `{"channelId":"c1","type":"custom","data":` + deep + `}`, "data"},
		{"POST", "/message", js, `{"channelId":"c1","type":"custom","data":{"card":` + nested(2000, true, `1`) + `}}`, "data"},
		{"POST", "/message", js, `{"channelId":"c1","type":"custom","data":{"card":{"n\u0000":1}}}`, "data.card"},
		{"POST", "/message", js, `{"channelId":"c1","type":"text","data":{"text":"hi"},"tags":["\u0000"]}`, "tags[0]"},
		{"POST", "/message", form, "channelId=c1&type=text&data%5Btext%5D=%FE", "data[text]"},

		// Update a user.
		{"PUT", "/users", js, "{\"userId\":\"u1\",\"displayName\":\"\xff\"}", "displayName"},
		{"PUT", "/users", js, `{"userId":"u1","displayName":"a\u0000"}`, "displayName"},
		{"PUT", "/users", js, `{"userId":"u\u0000"}`, "userId"},
		{"PUT", "/users", js, "{\"userId\":\"u1\",\"metadata\":{\"k\":\"\xfe\"}}", "metadata.k"},
		{"PUT", "/users", js, `{"userId":"u1","metadata":{"k":"\u0000"}}`, "metadata.k"},
		{"PUT", "/users", js, `{"userId":"u1","metadata":` + deep + `}`, "metadata"},
		{"PUT", "/users", js, `{"userId":"u1","roles":["user","\u0000"]}`, "roles[1]"},

		// Lone surrogate escapes (encoding/json would store U+FFFD): a lone
		// high one, a lone low one, a high one followed by anything but a
		// low one; in values and keys, at every depth, in JSON bodies and
		// in JSON carried by form values.
		{"POST", "/channel", js, `{"channelId":"c2","type":"standard","displayName":"\ud800"}`, "displayName"},
		{"POST", "/channel", js, `{"channelId":"c2","type":"standard","displayName":"One \udc00"}`, "displayName"},
		{"POST", "/channel", js, `{"channelId":"c2","type":"standard","metadata":{"a":{"b":["x","\uDFFF"]}}}`, "metadata.a.b[1]"},
		{"POST", "/channel", js, `{"channelId":"c2","type":"standard","metadata":{"\ud800":1}}`, "metadata"},
		{"POST", "/channel", js, `{"channelId":"c2","type":"standard","\udc00x":1}`, "body"},
		{"POST", "/channel", js, `{"channelId":"c2","type":"standard","tags":["ok","\ud83d"]}`, "tags[1]"},
		{"POST", "/channel", form, "channelId=c2&type=standard&metadata=%7B%22k%22%3A%22%5Cud800%22%7D", "metadata.k"},
		{"POST", "/channels", form, `excludeTags=%5B%22a%22%2C%22%5Cud800%22%5D`, "excludeTags[1]"},
		{"POST", "/message", js, `{"channelId":"c1","type":"text","data":{"text":"a\ud83dz"}}`, "data.text"},
		{"POST", "/message", js, `{"channelId":"c1","type":"text","data":{"text":"\ud800\ud800"}}`, "data.text"},
		{"POST", "/message", js, `{"channelId":"c1","type":"text","data":{"text":"\ud83d\u0041"}}`, "data.text"},
		{"POST", "/message", js, `{"channelId":"c1","type":"text","data":{"text":"\udc00\ud800"}}`, "data.text"},
		{"POST", "/message", js, `{"channelId":"c1","type":"custom","data":{"card":[1,{"n":"\ud800"}]}}`, "data.card[1].n"},
		{"POST", "/message", js, `{"channelId":"c1","type":"custom","data":{"card":{"\udbff":1}}}`, "data.card"},
		{"PUT", "/users", js, `{"userId":"u1","metadata":{"k":"\ud800"}}`, "metadata.k"},
		{"PUT", "/users", js, `{"userId":"u1","displayName":"\ud800","metadata":{"k":"v"}}`, "displayName"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path+" "+c.field, func(t *testing.T) {
			r := e.do(c.method, c.path, c.contentType, c.body)
			requireError(t, r, 400000, c.field+": ")
			require.Equal(t, before, state(), "the request changed something")
		})
	}

	// A surrogate pair is one character, stored as such; an escaped
	// backslash before "ud800" is no escape.
	r := e.do("POST", "/message", js, `{"channelId":"c1","type":"text","data":{"text":"\ud83d\ude00 \\ud800"}}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Contains(t, string(r.body), `"text":"😀 \\ud800"`)

	// Nesting up to the bound is accepted, as in forms.
	r = e.do("POST", "/channel", js, `{"channelId":"c3","type":"standard","metadata":`+nested(32, false, `"x"`)+`}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	r = e.form("POST", "/channel", map[string][]string{"channelId": {"c4"}, "type": {"standard"}, "metadata" + strings.Repeat("[k]", 32): {"x"}})
	require.Equal(t, 200, r.status, "%s", r.body)
	r = e.do("POST", "/channel", form, "channelId=c5&type=standard&metadata"+strings.Repeat("%5Bk%5D", 33)+"=x")
	requireError(t, r, 400000, "metadata: nested more than 32 levels deep")
}
