package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
	"github.com/chatengine/chat/httpapi"
)

// members returns the member ids of a channel.
func (e *env) members(id string) []string {
	e.t.Helper()
	got, err := e.c.GetChannel(ctx(e.t), id)
	require.NoError(e.t, err)
	var out []string
	for _, cu := range got.ChannelUsers {
		if cu.Membership == chat.MembershipMember {
			out = append(out, cu.UserID)
		}
	}
	sort.Strings(out)
	return out
}

// TestFormArrays sends userIds in every array form of docs/api.md section 1 (Limits and Decoding rules).
func TestFormArrays(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memoryStore)
	cases := map[string]string{
		"repeated":   "userIds=a&userIds=b",
		"brackets":   "userIds[]=a&userIds[]=b",
		"escaped":    "userIds%5B%5D=a&userIds%5B%5D=b",
		"indexed":    "userIds[1]=b&userIds[0]=a",
		"json":       "userIds=" + url.QueryEscape(`["a","b"]`),
		"mixed":      "userIds=a&userIds[]=b",
		"single":     "userIds=a&userIds=b&unknown=1&referenceVersion=3",
		"dupedIndex": "userIds[0]=a&userIds[5]=b",
	}
	i := 0
	for name, body := range cases {
		i++
		id := "form-" + name
		r := e.do("POST", "/channel", "application/x-www-form-urlencoded", "channelId="+id+"&type=standard&"+body)
		require.Equal(t, 200, r.status, "%s: %s", name, r.body)
		require.Equal(t, []string{"a", "b"}, e.members(id), name)
	}
	// The same forms on a membership endpoint, and JSON to a "form" endpoint.
	r := e.do("POST", "/channel/form-json/users", "application/x-www-form-urlencoded", "userIds[]=c")
	require.Equal(t, 200, r.status, "%s", r.body)
	r = e.do("POST", "/channel/form-json/users", "application/json", `{"userIds":["d"],"channelId":"form-json"}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	// No content type: JSON when the body starts with '{', else form.
	r = e.do("POST", "/channel/form-json/users", "", ` {"userIds":["e"]}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	r = e.do("POST", "/channel/form-json/users", "", `userIds=f`)
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, []string{"a", "b", "c", "d", "e", "f"}, e.members("form-json"))
	// A single empty value is an empty array.
	requireError(t, e.do("POST", "/channel/form-json/users", "application/x-www-form-urlencoded", "userIds="), chat.CodeBadRequest, "userIds: is required")
}

// TestFormObjects sends options and metadata as brackets and as JSON
// strings.
func TestFormObjects(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memoryStore)
	r := e.do("POST", "/channel", "application/x-www-form-urlencoded",
		"channelId=o1&type=standard&metadata[a][b]=1&metadata[a][c][]=x&metadata[a][c][]=y&metadata[n]=2&tags[]=t")
	require.Equal(t, 200, r.status, "%s", r.body)
	ch := r.json["channels"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"a": map[string]any{"b": "1", "c": []any{"x", "y"}}, "n": "2"}, ch["metadata"])
	r = e.form("POST", "/channel", url.Values{"channelId": {"o2"}, "type": {"standard"}, "metadata": {`{"a":{"b":1}}`}, "tags": {`["x","y"]`}})
	require.Equal(t, 200, r.status, "%s", r.body)
	ch = r.json["channels"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"a": map[string]any{"b": float64(1)}}, ch["metadata"])
	require.Equal(t, []any{"x", "y"}, ch["tags"])
	for i := range 3 {
		_, err := e.c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "p" + string(rune('a'+i)), Type: "standard"})
		require.NoError(t, err)
	}
	// options as brackets, as a JSON string, and nested in JSON.
	for _, body := range []string{"options[limit]=2&options[skip]=1", "options=" + url.QueryEscape(`{"limit":2,"skip":1}`)} {
		r = e.do("POST", "/channels", "application/x-www-form-urlencoded", body)
		require.Equal(t, 200, r.status, "%s", r.body)
		require.Len(t, r.json["channels"], 2, body)
		require.Equal(t, "pb", r.json["channels"].([]any)[0].(map[string]any)["channelId"], body)
	}
	r = e.do("POST", "/channels", "application/json", `{"options":{"limit":2.0,"skip":1}}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Len(t, r.json["channels"], 2)
	// Query strings of GET endpoints use the same rules.
	r = e.do("GET", "/reactions?referenceId=nope&referenceType=message&options[limit]=5", "", "")
	requireError(t, r, chat.CodeNotFound, "nope")
	r = e.do("GET", "/users?limit=1", "", "")
	require.Equal(t, 200, r.status)
	require.Len(t, r.json["users"], 1)
}

// TestFormScalars checks booleans, numbers and the errors for wrong types.
func TestFormScalars(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memoryStore)
	_, err := e.c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "c", Type: "standard", UserIDs: []string{"a"}})
	require.NoError(t, err)
	require.NoError(t, e.c.CloseChannel(ctx(t), "c"))
	for v, want := range map[string]int{"true": 1, "1": 1, "TRUE": 1, "false": 0, "0": 0, "": 0} {
		r := e.form("POST", "/channels", url.Values{"includeClosed": {v}})
		require.Equal(t, 200, r.status, "%s", r.body)
		require.Len(t, r.json["channels"], want, "includeClosed=%q", v)
	}
	_, err = e.c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "m", Type: "standard", UserIDs: []string{"a"}})
	require.NoError(t, err)
	r := e.form("PUT", "/channel/m/users/mute", url.Values{"mutePeriod": {"60000"}, "userIds[]": {"a"}})
	require.Equal(t, 200, r.status, "%s", r.body)

	bad := []struct{ method, path, ct, body, want string }{
		{"POST", "/channels", "application/x-www-form-urlencoded", "options[limit]=ten", "options.limit: must be an integer"},
		{"POST", "/channels", "application/x-www-form-urlencoded", "options[limit]=1.5", "options.limit: must be an integer"},
		{"POST", "/channels", "application/json", `{"options":{"limit":"10"}}`, "options.limit: must be an integer"},
		{"POST", "/channels", "application/json", `{"options":{"limit":1e300}}`, "options.limit: is out of range"},
		{"POST", "/channels", "application/x-www-form-urlencoded", "options[skip]=99999999999999999999", "options.skip: is out of range"},
		{"POST", "/channels", "application/json", `{"options":5}`, "options: must be an object"},
		{"POST", "/channels", "application/x-www-form-urlencoded", "includeClosed=yes", "includeClosed: must be a boolean"},
		{"POST", "/channels", "application/json", `{"includeClosed":"true"}`, "includeClosed: must be a boolean"},
		{"POST", "/channels", "application/json", `{"tags":"a"}`, "tags: must be an array of strings"},
		{"POST", "/channels", "application/json", `{"tags":[1]}`, "tags: must be an array of strings"},
		{"POST", "/channels", "application/x-www-form-urlencoded", "filter=a&filter=b", "filter: must be a string"},
		{"POST", "/channels", "application/json", `{"userId":5}`, "userId: must be a string"},
		{"POST", "/channels", "application/x-www-form-urlencoded", "options=notjson", "options: must be an object"},
		{"POST", "/channels", "application/x-www-form-urlencoded", "options[limit]=1&options=x", "options: mixes an object"},
		{"PUT", "/channel/m/mute", "application/json", `{"mutePeriod":true}`, "mutePeriod: must be an integer"},
		{"PUT", "/channel/m/mute", "application/x-www-form-urlencoded", "mutePeriod=-5", "mutePeriod"},
		{"POST", "/channel", "application/json", `{"channelId":"z","type":"standard","metadata":[1]}`, "metadata: must be an object"},
		{"POST", "/channel", "application/json", `{"channelId":"z",`, "body: invalid JSON"},
		{"POST", "/channel", "application/json", `[1,2]`, "body: must be a JSON object"},
		{"POST", "/channel", "application/json", `{"channelId":"z"} {}`, "body: invalid JSON: unexpected data"},
		{"POST", "/channel", "application/x-www-form-urlencoded", "channelId=%zz", "body: malformed URL encoding"},
		{"GET", "/users?limit=%zz", "", "", "query string: malformed URL encoding"},
		{"GET", "/users?limit=x", "", "", "limit: must be an integer"},
		{"GET", "/users?limit=1000", "", "", "limit"},
		{"GET", "/messages/x/images?size=xl", "", "", "size: must be small, medium, large or full"},
		{"GET", "/users?filter=" + strings.Repeat("[", 3), "", "", "filter"},
		{"POST", "/channels", "application/x-www-form-urlencoded", "options" + strings.Repeat("[a]", 40) + "=1", "options: nested more than"},
	}
	for _, b := range bad {
		r := e.do(b.method, b.path, b.ct, b.body)
		requireError(t, r, chat.CodeBadRequest, b.want)
		require.Equal(t, []any{map[string]any{"field": strings.Split(b.want, ":")[0]}}, r.json["data"].(map[string]any)["detail"], "%s %s", b.body, r.body)
	}
	// An unsupported content type is 415.
	requireError(t, e.do("POST", "/channels", "text/xml", "<a/>"), chat.CodeUnsupportedMedia, "text/xml")
	requireError(t, e.do("POST", "/channels", "bad/type; =", "x"), chat.CodeUnsupportedMedia, "")
	// So is a compressed body (it is not decompressed, so no bomb can
	// inflate), and the request changes nothing; "identity" is no coding.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(`{"channelId":"gz","type":"standard"}`))
	require.NoError(t, zw.Close())
	requireError(t, e.do("POST", "/channel", "application/json", gz.String(), "Content-Encoding", "gzip"), chat.CodeUnsupportedMedia, "Content-Encoding gzip")
	requireError(t, e.do("POST", "/messages/images", "multipart/form-data; boundary=x", "--x--", "Content-Encoding", "identity, br"), chat.CodeUnsupportedMedia, "Content-Encoding br")
	_, err = e.c.GetChannel(ctx(t), "gz")
	requireCode(t, err, chat.CodeNotFound)
	r = e.do("POST", "/channel", "application/json", `{"channelId":"plain","type":"standard"}`, "Content-Encoding", "identity")
	require.Equal(t, 200, r.status, "%s", r.body)
	// JSON labelled as a form (curl -d '{...}' without -H) is JSON, and
	// so is an unlabelled body that starts with '{'; malformed JSON in a
	// form-labelled body is a JSON error, not a missing field.
	r = e.do("POST", "/channel", "application/x-www-form-urlencoded", ` {"channelId":"curl","type":"standard","userIds":["bob"]}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	ch, err := e.c.GetChannel(ctx(t), "curl")
	require.NoError(t, err)
	require.Equal(t, 1, ch.MemberCount)
	r = e.do("POST", "/channel", "", `{"channelId":"bare","type":"standard"}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	requireError(t, e.do("POST", "/channel", "application/x-www-form-urlencoded", `{"channelId":"broken",`), chat.CodeBadRequest, "body: invalid JSON")
	_, err = e.c.GetChannel(ctx(t), "broken")
	requireCode(t, err, chat.CodeNotFound)
	// Extra fields are ignored.
	r = e.do("POST", "/channel", "application/json", `{"channelId":"extra","type":"standard","referenceVersion":2,"whatever":{"x":[1]}}`)
	require.Equal(t, 200, r.status, "%s", r.body)
}

// TestDeleteBodies checks DELETE with a JSON body, a form body and a query
// string.
func TestDeleteBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memoryStore)
	_, err := e.c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "d", Type: "standard", UserIDs: []string{"a", "b", "c", "d", "e"}})
	require.NoError(t, err)
	r := e.do("DELETE", "/channel/d/users", "application/json", `{"userIds":["a"]}`)
	require.Equal(t, map[string]any{"success": true}, r.json)
	r = e.do("DELETE", "/channel/d/users", "application/x-www-form-urlencoded", "userIds[]=b")
	require.Equal(t, 200, r.status, "%s", r.body)
	r = e.do("DELETE", "/channel/d/users?userIds=c&userIds=d", "", "")
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, []string{"e"}, e.members("d"))
	// Body fields win over query fields.
	r = e.do("DELETE", "/channel/d/users?userIds=zzz", "application/json", `{"userIds":["e"]}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Empty(t, e.members("d"))

	// Rules and reactions by query string.
	_, err = e.c.AddRules(ctx(t), chat.Blacklist, []string{"w1", "w2"}, false)
	require.NoError(t, err)
	r = e.do("DELETE", "/blacklist/records?ruleIds[]=w1", "", "")
	require.Equal(t, 200, r.status, "%s", r.body)
	r = e.do("DELETE", "/blacklist/records", "", "ruleIds=w2")
	require.Equal(t, 200, r.status, "%s", r.body)
	q, err := e.c.QueryRules(ctx(t), chat.Blacklist, nil)
	require.NoError(t, err)
	require.Empty(t, q.Records)
	_, err = e.c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "r", Type: "standard"})
	require.NoError(t, err)
	m, err := e.c.SendText(ctx(t), "r", "hi")
	require.NoError(t, err)
	id := m.MessageID
	_, err = e.c.AddReaction(ctx(t), client.ReactionRequest{ReferenceID: id, ReactionName: "like"})
	require.NoError(t, err)
	r = e.do("DELETE", "/reactions?referenceId="+id+"&referenceType=message&reactionName=like", "", "")
	require.Equal(t, true, r.json["success"])
	require.NotEmpty(t, r.json["removedId"])
	r = e.do("DELETE", "/reactions?referenceId="+id+"&referenceType=message&reactionName=like", "", "")
	require.Equal(t, map[string]any{"success": true, "removedId": nil}, r.json)
}

// TestMount serves the handler under chi and under net/http.
func TestMount(t *testing.T) {
	t.Parallel()
	svc, err := chat.New(ctx(t), memoryStore(t), chat.Config{})
	require.NoError(t, err)
	_, token, err := svc.CreateAdmin(ctx(t), "", "root", "")
	require.NoError(t, err)
	h := httpapi.New(svc, httpapi.Config{})

	r := chi.NewRouter()
	r.Get("/livez", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) })
	r.Mount("/api/v2", h)
	mux := http.NewServeMux()
	mux.Handle("/api/v2/", http.StripPrefix("/api/v2", h))

	for name, host := range map[string]http.Handler{"chi": r, "net/http": mux} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(host)
			defer srv.Close()
			c := client.New(srv.URL+"/api/v2", token)
			id := name + "/ch 1%"
			_, err := c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: id, Type: "standard"})
			require.NoError(t, err)
			_, err = c.AddUsers(ctx(t), id, []string{"a"})
			require.NoError(t, err)
			got, err := c.GetChannel(ctx(t), id)
			require.NoError(t, err)
			require.Equal(t, id, got.ChannelID)
			// Unknown routes and methods inside the mount are ours.
			req, _ := http.NewRequest("GET", srv.URL+"/api/v2/nope", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
			require.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"))
			req, _ = http.NewRequest("PATCH", srv.URL+"/api/v2/channel/"+url.PathEscape(id)+"/users", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err = http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
			require.Equal(t, "POST, DELETE", resp.Header.Get("Allow"))
			require.NotEmpty(t, resp.Header.Get("X-Request-Id"))
		})
	}
}

// TestRoutes walks the chi router and compares it with Routes().
func TestRoutes(t *testing.T) {
	t.Parallel()
	svc, err := chat.New(ctx(t), memoryStore(t), chat.Config{})
	require.NoError(t, err)
	routes, ok := httpapi.New(svc, httpapi.Config{}).(chi.Routes)
	require.True(t, ok, "New returns a chi router")
	var walked []httpapi.Route
	require.NoError(t, chi.Walk(routes, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		walked = append(walked, httpapi.Route{Method: method, Pattern: pattern})
		return nil
	}))
	want := httpapi.Routes()
	key := func(r httpapi.Route) string { return r.Pattern + " " + r.Method }
	sortRoutes := func(rs []httpapi.Route) {
		slices.SortFunc(rs, func(a, b httpapi.Route) int { return strings.Compare(key(a), key(b)) })
	}
	require.Len(t, want, 83)
	sortRoutes(walked)
	sortRoutes(want)
	require.Equal(t, want, walked)
	// No duplicates.
	require.Len(t, slices.CompactFunc(slices.Clone(want), func(a, b httpapi.Route) bool { return key(a) == key(b) }), len(want))
}
