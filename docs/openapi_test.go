package docs_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/internal/pgtest"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/store/sqlite"
	"github.com/chatengine/chat/store/storetest"
	"github.com/chatengine/chat/stream"
	"github.com/chatengine/chat/webhook"
)

// loadDoc loads and validates openapi.yaml.
func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("openapi.yaml")
	require.NoError(t, err)
	require.NoError(t, doc.Validate(loader.Context), "openapi.yaml is not a valid OpenAPI document")
	require.True(t, doc.IsOpenAPI31OrLater(), "openapi.yaml must be OpenAPI 3.1")
	return doc
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	require.Contains(t, doc.Components.SecuritySchemes, "bearerAuth")
	for _, name := range []string{"Channel", "ChannelUser", "Message", "User", "Role", "Rule", "Reaction",
		"Webhook", "Delivery", "Error", "Paging", "ChannelList", "MessageList", "UserList", "RoleList",
		"RuleRecords", "ReactorList", "WebhookList", "DeliveryList", "Success"} {
		require.Contains(t, doc.Components.Schemas, name)
	}
	// Every operation answers 401 without a token, and documents its 200 (or 201).
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			require.NotNil(t, op.Responses.Status(http.StatusUnauthorized), "%s %s lacks 401", method, path)
			require.True(t, op.Responses.Status(200) != nil || op.Responses.Status(201) != nil, "%s %s lacks a success response", method, path)
			require.NotEmpty(t, op.OperationID, "%s %s lacks an operationId", method, path)
		}
	}
}

// TestOpenAPIRoutesMatchHandler fails when a route exists that the document
// lacks, or the other way round. chi's {param} is OpenAPI's syntax too.
func TestOpenAPIRoutesMatchHandler(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	inDoc := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			inDoc[strings.ToUpper(method)+" "+path] = true
		}
	}
	served := map[string]bool{}
	for _, r := range httpapi.Routes() {
		served[r.Method+" "+r.Pattern] = true
	}
	var missing, extra []string
	for k := range served {
		if !inDoc[k] {
			missing = append(missing, k)
		}
	}
	for k := range inDoc {
		if !served[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	require.Empty(t, missing, "routes served by httpapi but missing from openapi.yaml")
	require.Empty(t, extra, "operations in openapi.yaml that httpapi does not serve")
	require.Len(t, served, len(httpapi.Routes()), "httpapi.Routes lists a route twice")
}

// fixture is httpapi over the memory store with an admin token and a
// webhook dispatcher delivering to a local receiver.
type fixture struct {
	t        *testing.T
	doc      *openapi3.T
	srv      *httptest.Server
	token    string
	receiver *httptest.Server
	covered  map[string]int
	store    chat.Store
}

// stores are the adapters the responses are recorded over: the JSON
// shapes must not depend on the store.
var stores = []struct {
	name string
	open func(t *testing.T) chat.Store
}{
	{"memory", func(t *testing.T) chat.Store { return memory.New() }},
	{"sqlite", func(t *testing.T) chat.Store {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "chat.db"), nil)
		if errors.Is(err, sqlite.ErrNeedsCgo) {
			t.Skip(err.Error()) // a build without cgo has no SQLite driver
		}
		require.NoError(t, err)
		return st
	}},
	{"postgres", func(t *testing.T) chat.Store {
		dsn := pgtest.URL(t)
		schema := pgtest.SchemaName()
		st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: schema, MaxOpenConns: 4})
		require.NoError(t, err)
		t.Cleanup(func() { // after the fixture closed the store
			db, err := sql.Open("postgres", dsn)
			if err == nil {
				_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
				db.Close()
			}
		})
		return st
	}},
}

func newFixture(t *testing.T, open func(t *testing.T) chat.Store) *fixture {
	t.Helper()
	ctx := context.Background()
	st := open(t)
	t.Cleanup(func() { st.Close() })
	var disp *webhook.Dispatcher
	svc, err := chat.New(ctx, st, chat.Config{OnCommit: func() { disp.Wake() }})
	require.NoError(t, err)
	disp = webhook.New(svc, st, webhook.Config{AllowPrivate: true, Schedule: []time.Duration{0, time.Millisecond}})
	require.NoError(t, disp.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = disp.Stop(sctx)
	})
	_, token, err := svc.CreateAdmin(ctx, "", "root", "root")
	require.NoError(t, err)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	hub := stream.New(svc, stream.Config{})
	require.NoError(t, hub.Start(ctx))
	t.Cleanup(func() { _ = hub.Stop(context.Background()) })
	srv := httptest.NewServer(httpapi.New(svc, httpapi.Config{
		Events:               hub,
		AllowPrivateWebhooks: true,
		MaxBodyBytes:         64 << 10,
		Logger:               nil,
	}))
	t.Cleanup(srv.Close)
	return &fixture{t: t, doc: loadDoc(t), srv: srv, token: token, receiver: recv, covered: map[string]int{}, store: st}
}

// call describes one request: the route pattern, its path parameters, the
// query string and the body (JSON unless form or multipart is set).
type call struct {
	method, pattern string
	params          map[string]string
	query           string
	json            any
	form            string
	multipart       *multipartBody
	headers         map[string]string
	noAuth          bool
	want            int
}

type multipartBody struct {
	fields   [][2]string
	fileName string
	fileType string
	file     []byte
}

func (m *multipartBody) encode() ([]byte, string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range m.fields {
		_ = w.WriteField(f[0], f[1])
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, m.fileName))
	h.Set("Content-Type", m.fileType)
	part, _ := w.CreatePart(h)
	_, _ = part.Write(m.file)
	_ = w.Close()
	return b.Bytes(), w.FormDataContentType()
}

// body returns the request body bytes and content type.
func (c *call) body() ([]byte, string) {
	switch {
	case c.multipart != nil:
		return c.multipart.encode()
	case c.form != "":
		return []byte(c.form), "application/x-www-form-urlencoded"
	case c.json != nil:
		if s, ok := c.json.(string); ok {
			return []byte(s), "application/json"
		}
		b, _ := json.Marshal(c.json)
		return b, "application/json"
	}
	return nil, ""
}

func (c *call) path() string {
	p := c.pattern
	for k, v := range c.params {
		p = strings.ReplaceAll(p, "{"+k+"}", url.PathEscape(v))
	}
	if c.query != "" {
		p += "?" + c.query
	}
	return p
}

func (c *call) request(base, token string) *http.Request {
	b, ct := c.body()
	var rd io.Reader
	if b != nil {
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(c.method, base+c.path(), rd)
	if err != nil {
		panic(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if !c.noAuth {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	return req
}

// do sends c, checks the status, validates the request and the response
// against the document and returns the decoded JSON body (nil for binary
// responses).
func (f *fixture) do(c call) map[string]any {
	t := f.t
	t.Helper()
	if c.want == 0 {
		c.want = http.StatusOK
	}
	resp, err := f.srv.Client().Do(c.request(f.srv.URL, f.token))
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, c.want, resp.StatusCode, "%s %s: %s", c.method, c.path(), raw)
	f.covered[c.method+" "+c.pattern]++

	item := f.doc.Paths.Value(c.pattern)
	require.NotNil(t, item, "openapi.yaml has no path %s", c.pattern)
	op := item.GetOperation(c.method)
	require.NotNil(t, op, "openapi.yaml has no operation %s %s", c.method, c.pattern)
	route := &routers.Route{Spec: f.doc, Path: c.pattern, PathItem: item, Method: c.method, Operation: op}
	opts := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            true,
	}
	// The request as sent must be one the document describes. Multipart
	// file parts are checked by the handler itself.
	vreq := c.request("http://127.0.0.1:8080/api/v2", f.token)
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: c.params, Route: route, Options: opts}
	if c.multipart == nil && c.want < 400 {
		assert.NoError(t, openapi3filter.ValidateRequest(context.Background(), in), "request %s %s does not match openapi.yaml", c.method, c.path())
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                opts,
	}
	out.SetBodyBytes(raw)
	assert.NoError(t, openapi3filter.ValidateResponse(context.Background(), out),
		"response of %s %s (%d) does not match openapi.yaml: %s", c.method, c.path(), resp.StatusCode, raw)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return nil
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func smallPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 40, 30))
	for y := 0; y < 30; y++ {
		for x := 0; x < 40; x++ {
			img.Set(x, y, color.NRGBA{uint8(x * 6), uint8(y * 8), 128, 255})
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// linkQuery checks that a signed link is the API prefix, then path, and
// returns its query string.
func linkQuery(t *testing.T, link, path string) string {
	t.Helper()
	p, q, ok := strings.Cut(link, "?")
	require.True(t, ok, "link %s has no query", link)
	require.Equal(t, "/api/v2"+path, p)
	return q
}

func first(m map[string]any, key string) map[string]any {
	return m[key].([]any)[0].(map[string]any)
}

// TestOpenAPIResponses makes a representative request to every route (and
// a few that fail) and validates each request and response against the
// document.
func TestOpenAPIResponses(t *testing.T) {
	t.Parallel()
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			testResponses(t, newFixture(t, sc.open))
		})
	}
}

func testResponses(t *testing.T, f *fixture) {
	ch := map[string]string{"channelId": "general"}

	// Webhooks first, so that the events below are delivered.
	hook := first(f.do(call{method: "POST", pattern: "/webhooks", json: map[string]any{"url": f.receiver.URL + "/hook"}, want: 201}), "webhooks")
	hookID := hook["webhookId"].(string)
	f.do(call{method: "GET", pattern: "/webhooks"})

	// Roles and users.
	f.do(call{method: "PUT", pattern: "/roles", json: map[string]any{"publicIds": []string{"moderator"}, "permissions": []string{chat.PermExemptFromMute}}})
	f.do(call{method: "PUT", pattern: "/roles", form: "publicIds=helper&permissions=Custom/Thing"})
	f.do(call{method: "GET", pattern: "/roles", query: "filter=mod"})

	// Channels.
	f.do(call{method: "POST", pattern: "/channel", json: map[string]any{"channelId": "general", "type": "standard",
		"displayName": "General", "metadata": map[string]any{"topic": "all"}, "tags": []string{"team"}, "userIds": []string{"alice", "bob"}}})
	f.do(call{method: "POST", pattern: "/channel", form: "channelId=random&type=standard&userIds=alice&userIds=carol&metadata[a][b]=1"})
	f.do(call{method: "POST", pattern: "/channel", json: map[string]any{"channelId": "general", "type": "standard"}, want: 409})
	f.do(call{method: "POST", pattern: "/channel", json: map[string]any{"type": "standard"}, want: 400})
	f.do(call{method: "POST", pattern: "/channel", json: "{not json", want: 400})
	f.do(call{method: "POST", pattern: "/channel", json: map[string]any{"channelId": "x", "type": "standard"}, noAuth: true, want: 401})
	f.do(call{method: "POST", pattern: "/channel", json: map[string]any{"channelId": strings.Repeat("x", 70<<10), "type": "standard"}, want: 413})
	page := f.do(call{method: "POST", pattern: "/channels", form: "filter=all&options[limit]=1"})
	next := page["paging"].(map[string]any)["next"].(string)
	f.do(call{method: "POST", pattern: "/channels", json: map[string]any{"filter": "all", "options": map[string]any{"token": next}}})
	f.do(call{method: "POST", pattern: "/channels", json: map[string]any{"options": map[string]any{"token": "forged.token"}}, want: 400})
	f.do(call{method: "GET", pattern: "/channel/{channelId}", params: ch})
	f.do(call{method: "GET", pattern: "/channel/{channelId}", params: map[string]string{"channelId": "nope"}, want: 404})
	f.do(call{method: "PUT", pattern: "/channel/{channelId}", params: ch, json: map[string]any{"metadata": map[string]any{"topic": "news"}, "tags": []string{"public"}}})
	f.do(call{method: "PUT", pattern: "/channel/{channelId}", params: ch, form: "displayName=General"})
	f.do(call{method: "PUT", pattern: "/channel/{channelId}", params: ch, json: map[string]any{}, want: 400})
	f.do(call{method: "PUT", pattern: "/channel/{channelId}", params: map[string]string{"channelId": "nope"}, json: map[string]any{"tags": []string{}}, want: 404})
	f.do(call{method: "POST", pattern: "/channel/displayName", json: map[string]any{"channelId": "general", "displayName": "Everyone"}})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/displayName", params: ch, form: "displayName=All+of+us"})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/users", params: ch, json: map[string]any{"userIds": []string{"carol", "dave"}}})
	f.do(call{method: "DELETE", pattern: "/channel/{channelId}/users", params: ch, json: map[string]any{"userIds": []string{"dave"}}})
	f.do(call{method: "DELETE", pattern: "/channel/{channelId}/users", params: ch, query: "userIds=carol"})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/join", params: ch})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/typing", params: ch})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/typing", params: ch, json: map[string]any{}})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/typing", params: map[string]string{"channelId": "nope"}, want: 404})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/leave", params: ch})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/leave", params: ch, form: "channelId=general"})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/leave", params: map[string]string{"channelId": "nope"}, want: 404})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/typing", params: ch, noAuth: true, want: 401})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/join", params: ch})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/read", params: ch, json: map[string]any{}})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/read", params: ch, form: "segment=1", want: 400})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/read", params: map[string]string{"channelId": "random"}, json: map[string]any{}, want: 403})
	f.do(call{method: "PUT", pattern: "/channel/{channelId}/users/mute", params: ch, json: map[string]any{"userIds": []string{"alice"}, "mutePeriod": 60000}})
	f.do(call{method: "PUT", pattern: "/channel/{channelId}/users/mute", params: ch, json: map[string]any{"userIds": []string{"nobody"}, "mutePeriod": 1}, want: 400})
	slow := first(f.do(call{method: "PUT", pattern: "/channel/{channelId}/rateLimit", params: ch, json: map[string]any{"rateLimitWindow": 10000}}), "channels")
	require.Equal(t, true, slow["isRateLimited"])
	f.do(call{method: "PUT", pattern: "/channel/{channelId}/rateLimit", params: ch, form: "rateLimitWindow=0"})
	f.do(call{method: "PUT", pattern: "/channel/{channelId}/rateLimit", params: map[string]string{"channelId": "nope"}, json: map[string]any{"rateLimitWindow": 1}, want: 404})
	f.do(call{method: "PUT", pattern: "/channel/{channelId}/mute", params: ch, json: map[string]any{"mutePeriod": -1}})
	muted := first(f.do(call{method: "GET", pattern: "/channel/{channelId}", params: ch}), "channels")
	require.Equal(t, "9999-12-31T23:59:59.999Z", muted["muteTimeout"])
	f.do(call{method: "PUT", pattern: "/channel/{channelId}/mute", params: ch, form: "mutePeriod=0"})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/users/ban", params: ch, json: map[string]any{"userIds": []string{"bob"}}})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/users", params: ch, json: map[string]any{"userIds": []string{"bob"}}, want: 403})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/users/unban", params: ch, form: "userIds[]=bob"})

	// Messages.
	m1 := first(f.do(call{method: "POST", pattern: "/message", json: map[string]any{"channelId": "general", "type": "text", "data": map[string]any{"text": "hello"}, "tags": []string{"greeting"}}}), "messages")
	m1ID := m1["messageId"].(string)
	f.do(call{method: "POST", pattern: "/message", json: map[string]any{"channelId": "general", "type": "text", "data": map[string]any{"text": "a comment"}, "parentId": m1ID}})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/read", params: ch, json: map[string]any{"segment": 1}})
	f.do(call{method: "POST", pattern: "/message", json: map[string]any{"channelId": "general", "type": "custom", "data": map[string]any{"card": map[string]any{"title": "t", "n": 3}}}})
	f.do(call{method: "POST", pattern: "/message", form: "channelId=general&type=text&data[text]=from+a+form"})
	f.do(call{method: "POST", pattern: "/message", json: map[string]any{"channelId": "general", "type": "poll", "data": map[string]any{}}, want: 400})
	f.do(call{method: "POST", pattern: "/message", json: map[string]any{"channelId": "nope", "type": "text", "data": map[string]any{"text": "x"}}, want: 404})
	msgs := f.do(call{method: "POST", pattern: "/messages", json: map[string]any{"channelId": "general", "options": map[string]any{"last": 2}}})
	prev := msgs["paging"].(map[string]any)["previous"].(string)
	f.do(call{method: "POST", pattern: "/messages", json: map[string]any{"channelId": "general", "options": map[string]any{"token": prev}}})
	f.do(call{method: "POST", pattern: "/messages", form: "channelId=general&filterByParentId=true&options[first]=10"})
	f.do(call{method: "POST", pattern: "/messages", json: map[string]any{"channelId": "general", "parentId": m1ID}})
	f.do(call{method: "POST", pattern: "/messages", json: map[string]any{"channelId": "general", "userId": "admin", "options": map[string]any{"last": 2}}})
	// The SQLite store indexes messages after their commit (the server's
	// indexer); here the index is brought up to date at once.
	require.NoError(t, storetest.CatchUpSearch(context.Background(), f.store))
	found := f.do(call{method: "POST", pattern: "/messages/search", json: map[string]any{"query": "A", "channelId": "general", "options": map[string]any{"limit": 1}}})
	f.do(call{method: "POST", pattern: "/messages/search", form: "query=a&channelId=general&options[token]=" + url.QueryEscape(found["paging"].(map[string]any)["next"].(string))})
	f.do(call{method: "POST", pattern: "/messages/search", json: map[string]any{"query": "!!!"}, want: 400})
	mentioned := first(f.do(call{method: "POST", pattern: "/message", json: map[string]any{"channelId": "general", "type": "text",
		"data": map[string]any{"text": "hi @alice"}, "mentionedUserIds": []string{"alice"}}}), "messages")
	require.Equal(t, []any{"alice"}, mentioned["mentionedUserIds"])
	ms := f.do(call{method: "POST", pattern: "/messages/mentions", json: map[string]any{"userId": "alice", "options": map[string]any{"limit": 1}}})
	require.Len(t, ms["messages"], 1)
	f.do(call{method: "POST", pattern: "/messages/mentions", form: "userId=alice&channelId=general"})
	f.do(call{method: "POST", pattern: "/messages/mentions", json: map[string]any{"options": map[string]any{"token": "x"}}, want: 400})
	f.do(call{method: "POST", pattern: "/message", json: map[string]any{"channelId": "general", "type": "text",
		"data": map[string]any{"text": "x"}, "mentionedUserIds": []string{"nobody"}}, want: 400})
	f.do(call{method: "GET", pattern: "/message/{messageId}", params: map[string]string{"messageId": m1ID}})
	f.do(call{method: "GET", pattern: "/message/{messageId}", params: map[string]string{"messageId": "nope"}, want: 404})
	flagged := first(f.do(call{method: "POST", pattern: "/message/{messageId}/flags", params: map[string]string{"messageId": m1ID}}), "messages")
	require.EqualValues(t, 1, flagged["flagCount"])
	f.do(call{method: "DELETE", pattern: "/message/{messageId}/flags", params: map[string]string{"messageId": m1ID}})
	edited := first(f.do(call{method: "PUT", pattern: "/message/{messageId}", params: map[string]string{"messageId": m1ID},
		json: map[string]any{"data": map[string]any{"text": "hello, edited"}, "tags": []string{"greeting", "edited"}}}), "messages")
	require.NotNil(t, edited["editedAt"])
	f.do(call{method: "PUT", pattern: "/message/{messageId}", params: map[string]string{"messageId": m1ID}, form: "tags[]=form"})
	f.do(call{method: "PUT", pattern: "/message/{messageId}", params: map[string]string{"messageId": m1ID}, json: map[string]any{}, want: 400})
	f.do(call{method: "PUT", pattern: "/message/{messageId}", params: map[string]string{"messageId": "nope"}, json: map[string]any{"tags": []string{}}, want: 404})

	// Uploads.
	img := first(f.do(call{method: "POST", pattern: "/messages/images", multipart: &multipartBody{
		fields:   [][2]string{{"channelId", "general"}, {"caption", "a picture"}, {"tags", "pics"}, {"fullImage", "true"}},
		fileName: "pic.png", fileType: "image/png", file: smallPNG(t)}}), "messages")
	imgID := img["messageId"].(string)
	require.Equal(t, "image", img["type"])
	f.do(call{method: "GET", pattern: "/messages/{messageId}/images", params: map[string]string{"messageId": imgID}, query: "size=small"})
	f.do(call{method: "GET", pattern: "/messages/{messageId}/images", params: map[string]string{"messageId": imgID}, query: "size=full"})
	f.do(call{method: "GET", pattern: "/messages/{messageId}/images", params: map[string]string{"messageId": imgID}, query: "size=huge", want: 400})
	// Signed links open without a token; altered ones are 403.
	small := linkQuery(t, img["data"].(map[string]any)["urls"].(map[string]any)["small"].(string), "/messages/"+imgID+"/images")
	f.do(call{method: "GET", pattern: "/messages/{messageId}/images", params: map[string]string{"messageId": imgID}, query: small, noAuth: true})
	f.do(call{method: "GET", pattern: "/messages/{messageId}/images", params: map[string]string{"messageId": imgID},
		query: strings.Replace(small, "size=small", "size=large", 1), noAuth: true, want: 403})
	f.do(call{method: "GET", pattern: "/messages/{messageId}/images", params: map[string]string{"messageId": imgID},
		query: strings.Replace(small, "exp=", "exp=x", 1), noAuth: true, want: 400})
	f.do(call{method: "GET", pattern: "/messages/{messageId}/images", params: map[string]string{"messageId": imgID}, query: "size=small", noAuth: true, want: 401})
	f.do(call{method: "POST", pattern: "/messages/images", multipart: &multipartBody{
		fields: [][2]string{{"channelId", "general"}}, fileName: "x.txt", fileType: "text/plain", file: []byte("not an image")}, want: 415})
	file := first(f.do(call{method: "POST", pattern: "/messages/files", multipart: &multipartBody{
		fields: [][2]string{{"channelId", "general"}}, fileName: "notes.txt", fileType: "text/plain", file: []byte("0123456789")}}), "messages")
	fileID := file["messageId"].(string)
	f.do(call{method: "GET", pattern: "/messages/{messageId}/files", params: map[string]string{"messageId": fileID}})
	f.do(call{method: "GET", pattern: "/messages/{messageId}/files", params: map[string]string{"messageId": fileID}, headers: map[string]string{"Range": "bytes=2-5"}, want: 206})
	f.do(call{method: "GET", pattern: "/messages/{messageId}/files", params: map[string]string{"messageId": m1ID}, want: 404})
	fileLink := linkQuery(t, file["data"].(map[string]any)["url"].(string), "/messages/"+fileID+"/files")
	f.do(call{method: "GET", pattern: "/messages/{messageId}/files", params: map[string]string{"messageId": fileID}, query: fileLink, noAuth: true})
	f.do(call{method: "GET", pattern: "/messages/{messageId}/files", params: map[string]string{"messageId": fileID}, query: fileLink,
		noAuth: true, headers: map[string]string{"Range": "bytes=0-1"}, want: 206})
	f.do(call{method: "GET", pattern: "/messages/{messageId}/files", params: map[string]string{"messageId": imgID}, query: fileLink, noAuth: true, want: 403})

	// Reactions.
	f.do(call{method: "POST", pattern: "/reactions", json: map[string]any{"referenceId": m1ID, "referenceType": "message", "reactionName": "like"}})
	f.do(call{method: "POST", pattern: "/reactions", form: "referenceId=" + m1ID + "&referenceType=message&reactionName=wow"})
	f.do(call{method: "POST", pattern: "/reactions", json: map[string]any{"referenceId": m1ID, "referenceType": "post", "reactionName": "like"}, want: 400})
	f.do(call{method: "GET", pattern: "/reactions", query: "referenceId=" + m1ID + "&referenceType=message&options[limit]=1"})
	f.do(call{method: "GET", pattern: "/reactions", query: "referenceId=" + m1ID + "&referenceType=message&options[reactionName]=like"})
	most := f.do(call{method: "GET", pattern: "/reactions/messages/most", query: "reactionName=like"})
	require.Len(t, most["messages"], 1)
	f.do(call{method: "GET", pattern: "/reactions/messages/most", query: "reactionName=like&limit=5&channelId=general"})
	removed := f.do(call{method: "DELETE", pattern: "/reactions", json: map[string]any{"referenceId": m1ID, "referenceType": "message", "reactionName": "like"}})
	require.NotNil(t, removed["removedId"])
	removed = f.do(call{method: "DELETE", pattern: "/reactions", query: "referenceId=" + m1ID + "&referenceType=message&reactionName=like"})
	require.Nil(t, removed["removedId"])

	// Users.
	f.do(call{method: "GET", pattern: "/users"})
	up := f.do(call{method: "GET", pattern: "/users", query: "limit=2&search=a"})
	if n, ok := up["paging"].(map[string]any)["next"].(string); ok {
		f.do(call{method: "GET", pattern: "/users", query: "limit=2&search=a&pageToken=" + url.QueryEscape(n)})
	}
	f.do(call{method: "GET", pattern: "/users", query: "filter=bogus", want: 400})
	f.do(call{method: "GET", pattern: "/users/{userId}", params: map[string]string{"userId": "alice"}})
	f.do(call{method: "GET", pattern: "/users/{userId}", params: map[string]string{"userId": "nobody"}, want: 404})
	f.do(call{method: "PUT", pattern: "/users", json: map[string]any{"userId": "alice", "displayName": "Alice", "roles": []string{"moderator"}, "metadata": map[string]any{"team": "blue"}}})
	f.do(call{method: "PUT", pattern: "/users", form: "userId=erin&displayName=Erin&metadata[team]=red"})
	f.do(call{method: "PUT", pattern: "/users", json: map[string]any{"userId": "alice", "roles": []string{"no-such-role"}}, want: 400})
	f.do(call{method: "PUT", pattern: "/users", json: map[string]any{"userId": "alice", "roles": []string{chat.RoleGlobalAdmin}}, want: 403})
	f.do(call{method: "POST", pattern: "/users/{userId}/flags", params: map[string]string{"userId": "alice"}})
	f.do(call{method: "GET", pattern: "/users", query: "filter=flagged"})
	f.do(call{method: "DELETE", pattern: "/users/{userId}/flags", params: map[string]string{"userId": "alice"}})
	f.do(call{method: "POST", pattern: "/users/ban", json: map[string]any{"userId": "carol", "deleteMessages": true}})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/users", params: ch, json: map[string]any{"userIds": []string{"carol"}}, want: 403})
	f.do(call{method: "POST", pattern: "/users/unban", form: "userId=carol"})
	f.do(call{method: "POST", pattern: "/users/ban", json: map[string]any{"userId": "nobody"}, want: 404})

	// User tokens: minted by the admin, used by the user, revoked.
	ut := f.do(call{method: "POST", pattern: "/users/{userId}/token", params: map[string]string{"userId": "alice"}, json: map[string]any{"ttl": 3600}})
	f.do(call{method: "POST", pattern: "/users/{userId}/token", params: map[string]string{"userId": "alice"}, form: "ttl=0"})
	f.do(call{method: "POST", pattern: "/users/{userId}/token", params: map[string]string{"userId": "alice"}, json: map[string]any{"ttl": -1}, want: 400})
	asAlice := map[string]string{"Authorization": "Bearer " + ut["token"].(string)}
	f.do(call{method: "GET", pattern: "/users/{userId}", params: map[string]string{"userId": "alice"}, headers: asAlice})
	f.do(call{method: "GET", pattern: "/roles", headers: asAlice, want: 403})
	f.do(call{method: "POST", pattern: "/users/{userId}/tokens/revoke", params: map[string]string{"userId": "alice"}, headers: asAlice, want: 403})
	f.do(call{method: "POST", pattern: "/users/{userId}/tokens/revoke", params: map[string]string{"userId": "alice"}})
	f.do(call{method: "GET", pattern: "/users/{userId}", params: map[string]string{"userId": "alice"}, headers: asAlice, want: 401})

	// Blacklist.
	f.do(call{method: "POST", pattern: "/blacklist/records", json: map[string]any{"regexs": []string{"darn", "fr[i1]ck"}, "isMatchExactWord": true}})
	f.do(call{method: "POST", pattern: "/blacklist/records", json: map[string]any{"regexs": []string{"(unclosed"}}, want: 400})
	f.do(call{method: "POST", pattern: "/message", json: map[string]any{"channelId": "general", "type": "text", "data": map[string]any{"text": "darn it"}}, want: 403})
	f.do(call{method: "GET", pattern: "/blacklist/records"})
	f.do(call{method: "GET", pattern: "/blacklist/records", query: "regexs=darn"})
	f.do(call{method: "PUT", pattern: "/blacklist/records/{ruleId}", params: map[string]string{"ruleId": "darn"}, json: map[string]any{"ruleId": "dang", "isMatchExactWord": false}})
	f.do(call{method: "PUT", pattern: "/blacklist/records/{ruleId}", params: map[string]string{"ruleId": "absent"}, json: map[string]any{"ruleId": "x"}, want: 404})
	f.do(call{method: "PUT", pattern: "/blacklist/records/{ruleId}", params: map[string]string{"ruleId": "dang"}, json: map[string]any{"ruleId": "fr[i1]ck"}, want: 409})
	f.do(call{method: "DELETE", pattern: "/blacklist/records", query: "ruleIds=dang&ruleIds=fr%5Bi1%5Dck"})

	// Whitelist.
	f.do(call{method: "POST", pattern: "/whitelist/records", form: "regexs=example.com&regexs=https://docs.example.com/pub"})
	f.do(call{method: "POST", pattern: "/message", json: map[string]any{"channelId": "general", "type": "text", "data": map[string]any{"text": "see evil.io/x"}}, want: 403})
	f.do(call{method: "POST", pattern: "/message", json: map[string]any{"channelId": "general", "type": "text", "data": map[string]any{"text": "see https://sub.example.com/a"}}})
	f.do(call{method: "GET", pattern: "/whitelist/records"})
	f.do(call{method: "PUT", pattern: "/whitelist/records/{ruleId}", params: map[string]string{"ruleId": "example.com"}, json: map[string]any{"ruleId": "example.org"}})
	f.do(call{method: "DELETE", pattern: "/whitelist/records", json: map[string]any{"ruleIds": []string{"example.org", "https://docs.example.com/pub"}}})

	// Messages again: delete; and the remaining webhook endpoints once the
	// dispatcher delivered something.
	f.do(call{method: "DELETE", pattern: "/message/{messageId}", params: map[string]string{"messageId": m1ID}})
	f.do(call{method: "DELETE", pattern: "/message/{messageId}", params: map[string]string{"messageId": m1ID}})
	f.do(call{method: "POST", pattern: "/messages", json: map[string]any{"channelId": "general", "includeDeleted": true, "options": map[string]any{"first": 1}}})
	hp := map[string]string{"webhookId": hookID}
	var requestID string
	require.Eventually(t, func() bool {
		resp, err := f.srv.Client().Do((&call{method: "GET", pattern: "/webhooks/{webhookId}/deliveries", params: hp}).request(f.srv.URL, f.token))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var dl chat.DeliveryList
		if json.NewDecoder(resp.Body).Decode(&dl) != nil || len(dl.Deliveries) == 0 {
			return false
		}
		for _, d := range dl.Deliveries {
			if d.State == chat.DeliveryDelivered {
				requestID = d.RequestID
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "no delivery reached the receiver")
	f.do(call{method: "GET", pattern: "/webhooks/{webhookId}/deliveries", params: hp, query: "limit=2"})
	dl := f.do(call{method: "GET", pattern: "/webhooks/{webhookId}/deliveries", params: hp, query: "limit=100"})
	attempted := 0
	for _, d := range dl["deliveries"].([]any) {
		attempted += len(d.(map[string]any)["attemptLog"].([]any))
	}
	require.NotZero(t, attempted, "no delivery with attempts was validated")
	f.do(call{method: "POST", pattern: "/webhooks/{webhookId}/deliveries/{requestId}/redeliver", params: map[string]string{"webhookId": hookID, "requestId": requestID}})
	f.do(call{method: "POST", pattern: "/webhooks/{webhookId}/deliveries/{requestId}/redeliver", params: map[string]string{"webhookId": hookID, "requestId": "nope"}, want: 404})
	rot := first(f.do(call{method: "POST", pattern: "/webhooks/{webhookId}/secret", params: hp}), "webhooks")
	require.NotEqual(t, hook["secret"], rot["secret"])
	f.do(call{method: "POST", pattern: "/webhooks", json: map[string]any{"url": "ftp://example.com"}, want: 400})
	f.do(call{method: "POST", pattern: "/webhooks", json: map[string]any{"url": "https://example.com", "events": []string{"nope"}}, want: 400})
	f.do(call{method: "DELETE", pattern: "/webhooks/{webhookId}", params: hp})
	f.do(call{method: "DELETE", pattern: "/webhooks/{webhookId}", params: hp, want: 404})

	// Reports and a user's data.
	rm := first(f.do(call{method: "POST", pattern: "/message", json: map[string]any{"channelId": "general", "type": "text", "data": map[string]any{"text": "report me"}}}), "messages")
	rep := first(f.do(call{method: "POST", pattern: "/reports", json: map[string]any{"targetType": "message", "targetId": rm["messageId"], "reason": "spam", "note": "as seen"}}), "reports")
	rp := map[string]string{"reportId": rep["reportId"].(string)}
	f.do(call{method: "POST", pattern: "/reports", form: "targetType=user&targetId=alice&reason=abuse"})
	f.do(call{method: "POST", pattern: "/reports", json: map[string]any{"targetType": "message", "targetId": rm["messageId"], "reason": "spam"}, want: 409})
	f.do(call{method: "POST", pattern: "/reports", json: map[string]any{"targetType": "channel", "targetId": "general", "reason": "spam"}, want: 400})
	f.do(call{method: "POST", pattern: "/reports", json: map[string]any{"targetType": "user", "targetId": "nobody", "reason": "spam"}, want: 404})
	reports := f.do(call{method: "GET", pattern: "/reports", query: "state=open&options[limit]=1"})
	f.do(call{method: "GET", pattern: "/reports", query: "state=open&options[token]=" + url.QueryEscape(reports["paging"].(map[string]any)["next"].(string))})
	f.do(call{method: "GET", pattern: "/reports", query: "targetType=user&reporterId=root"})
	f.do(call{method: "GET", pattern: "/reports", query: "state=closed", want: 400})
	f.do(call{method: "GET", pattern: "/reports/{reportId}", params: rp})
	f.do(call{method: "GET", pattern: "/reports/{reportId}", params: map[string]string{"reportId": "nope"}, want: 404})
	f.do(call{method: "POST", pattern: "/reports/{reportId}/resolve", params: rp, json: map[string]any{"action": "shrug"}, want: 400})
	f.do(call{method: "POST", pattern: "/reports/{reportId}/resolve", params: rp, json: map[string]any{"action": "banUser"}})
	f.do(call{method: "POST", pattern: "/reports/{reportId}/resolve", params: rp, form: "action=dismiss", want: 409})
	f.do(call{method: "GET", pattern: "/reports", query: "state=resolved"})
	f.do(call{method: "GET", pattern: "/users/{userId}/export", params: map[string]string{"userId": "alice"}})
	f.do(call{method: "GET", pattern: "/users/{userId}/export", params: map[string]string{"userId": "nobody"}, want: 404})
	f.do(call{method: "POST", pattern: "/users/{userId}/erase", params: map[string]string{"userId": "dave"}})
	f.do(call{method: "POST", pattern: "/users/{userId}/erase", params: map[string]string{"userId": "dave"}})
	f.do(call{method: "POST", pattern: "/users/{userId}/erase", params: map[string]string{"userId": "nobody"}, want: 404})

	// Push devices and notification levels (the admin is a member of
	// bells, not of random).
	f.do(call{method: "POST", pattern: "/channel", json: map[string]any{"channelId": "bells", "type": "standard", "userIds": []string{"root"}}})
	bells := map[string]string{"channelId": "bells"}
	alice := map[string]string{"userId": "alice"}
	sub := map[string]any{"endpoint": "https://push.example.com/send/1", "expirationTime": nil, "keys": map[string]any{
		"p256dh": "BNo6ARYkQFH0Z2YNPjVUjqNKzPQ3roYHefpz_HVoo9Cb2sTNBCmmbVe72FdSf1i3l73kW_tsS381GHfJ7ZPsSv8", "auth": "8SE5ZM2pOPU4ux2c-FIbLw"}}
	dev := first(f.do(call{method: "POST", pattern: "/users/{userId}/devices", params: alice, json: map[string]any{"provider": "webpush", "token": sub}}), "devices")
	f.do(call{method: "POST", pattern: "/users/{userId}/devices", params: alice, form: "provider=firebase&token=fcm-token-1"})
	f.do(call{method: "POST", pattern: "/users/{userId}/devices", params: alice, json: map[string]any{"provider": "apn", "token": "xyz"}, want: 400})
	f.do(call{method: "GET", pattern: "/users/{userId}/devices", params: alice})
	f.do(call{method: "GET", pattern: "/push/vapid"})
	f.do(call{method: "DELETE", pattern: "/users/{userId}/devices/{deviceId}", params: map[string]string{"userId": "alice", "deviceId": dev["deviceId"].(string)}})
	f.do(call{method: "DELETE", pattern: "/users/{userId}/devices/{deviceId}", params: map[string]string{"userId": "alice", "deviceId": dev["deviceId"].(string)}, want: 404})
	f.do(call{method: "GET", pattern: "/users/{userId}/notifications", params: alice})
	f.do(call{method: "PUT", pattern: "/users/{userId}/notifications", params: alice, json: map[string]any{"level": "mentions"}})
	f.do(call{method: "PUT", pattern: "/users/{userId}/notifications", params: alice, form: "level=loud", want: 400})
	f.do(call{method: "GET", pattern: "/channel/{channelId}/notifications", params: bells})
	f.do(call{method: "PUT", pattern: "/channel/{channelId}/notifications", params: bells, json: map[string]any{"level": "none"}})
	f.do(call{method: "PUT", pattern: "/channel/{channelId}/notifications", params: bells, form: "level=default"})
	f.do(call{method: "PUT", pattern: "/channel/{channelId}/notifications", params: map[string]string{"channelId": "random"}, json: map[string]any{"level": "none"}, want: 403})
	f.do(call{method: "GET", pattern: "/channel/{channelId}/notifications", params: map[string]string{"channelId": "random"}, want: 403})

	// Close, both paths; writes to a closed channel are 403.
	f.do(call{method: "POST", pattern: "/channel/{channelId}/close", params: ch})
	f.do(call{method: "POST", pattern: "/channels/{channelId}/close", params: ch})
	f.do(call{method: "POST", pattern: "/message", json: map[string]any{"channelId": "general", "type": "text", "data": map[string]any{"text": "anyone?"}}, want: 403})
	f.do(call{method: "POST", pattern: "/channels", json: map[string]any{"includeClosed": true}})
	f.do(call{method: "POST", pattern: "/channel/{channelId}/close", params: map[string]string{"channelId": "nope"}, want: 404})
	f.do(call{method: "POST", pattern: "/channels", headers: map[string]string{"Content-Type": "text/plain"}, form: "x", want: 415})

	// Moderation: the dry run, the purge and the audit log.
	f.do(call{method: "POST", pattern: "/moderation/check", json: map[string]any{"userId": "alice", "channelId": "random", "type": "text", "data": map[string]any{"text": "hi"}}})
	f.do(call{method: "POST", pattern: "/moderation/check", json: map[string]any{"userId": "bob", "channelId": "random", "type": "text", "data": map[string]any{"text": "hi"}}})
	f.do(call{method: "POST", pattern: "/moderation/check", form: "userId=alice&type=text&data[text]=hello"})
	f.do(call{method: "POST", pattern: "/moderation/check", json: map[string]any{"channelId": "random", "type": "text"}, want: 400})
	f.do(call{method: "POST", pattern: "/users/{userId}/messages/delete", params: map[string]string{"userId": "alice"}, json: map[string]any{"since": "2020-01-01T00:00:00.000Z"}})
	f.do(call{method: "POST", pattern: "/users/{userId}/messages/delete", params: map[string]string{"userId": "carol"}, form: "channelId=random"})
	f.do(call{method: "POST", pattern: "/users/{userId}/messages/delete", params: map[string]string{"userId": "nobody"}, json: map[string]any{}, want: 404})
	f.do(call{method: "POST", pattern: "/users/{userId}/messages/delete", params: map[string]string{"userId": "alice"}, json: map[string]any{"since": "soon"}, want: 400})
	alice = map[string]string{"userId": "alice"}
	f.do(call{method: "POST", pattern: "/users/{userId}/blocks", params: alice, json: map[string]any{"userId": "mallory"}})
	f.do(call{method: "POST", pattern: "/users/{userId}/blocks", params: alice, form: "userId=bob"})
	f.do(call{method: "POST", pattern: "/users/{userId}/blocks", params: alice, json: map[string]any{"userId": "alice"}, want: 400})
	f.do(call{method: "GET", pattern: "/users/{userId}/blocks", params: alice})
	f.do(call{method: "DELETE", pattern: "/users/{userId}/blocks", params: alice, query: "userId=bob"})
	f.do(call{method: "DELETE", pattern: "/users/{userId}/blocks", params: alice, json: map[string]any{"userId": "mallory"}})
	audit := f.do(call{method: "GET", pattern: "/audit", query: "options[limit]=2"})
	f.do(call{method: "GET", pattern: "/audit", query: "options[token]=" + url.QueryEscape(audit["paging"].(map[string]any)["next"].(string))})
	f.do(call{method: "GET", pattern: "/audit", query: "action=channel.close&channelId=general&actorId=admin"})
	f.do(call{method: "GET", pattern: "/audit", query: "targetId=alice"})
	f.do(call{method: "GET", pattern: "/audit", query: "action=nope", want: 400})

	// The event stream: a ticket; a bad after and a spent ticket are
	// refused before any upgrade.
	f.do(call{method: "POST", pattern: "/events/ticket"})
	f.do(call{method: "GET", pattern: "/events", query: "after=x", want: 400})
	f.do(call{method: "GET", pattern: "/events", query: "ticket=spent", noAuth: true, want: 401})

	// Every route was exercised.
	for _, r := range httpapi.Routes() {
		require.NotZero(t, f.covered[r.Method+" "+r.Pattern], "no request exercised %s %s", r.Method, r.Pattern)
	}
}
