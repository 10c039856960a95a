package docs_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/memory"
)

// TestOpenAPIRateLimited checks the responses of a rate-limited API
// against openapi.yaml: a success with the X-RateLimit headers, then the
// 429 (400311) with Retry-After.
func TestOpenAPIRateLimited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	require.NoError(t, err)
	_, token, err := svc.CreateAdmin(ctx, "", "root", "root")
	require.NoError(t, err)
	srv := httptest.NewServer(httpapi.New(svc, httpapi.Config{AdminRateLimit: httpapi.RateLimit{Rate: 0.001, Burst: 1}}))
	t.Cleanup(srv.Close)
	doc := loadDoc(t)
	item := doc.Paths.Value("/users")
	route := &routers.Route{Spec: doc, Path: "/users", PathItem: item, Method: "GET", Operation: item.Get}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}

	for _, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		req, err := http.NewRequest("GET", srv.URL+"/users", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, want, resp.StatusCode, "%s", raw)
		require.Equal(t, "1", resp.Header.Get("X-RateLimit-Limit"))
		require.Equal(t, "0", resp.Header.Get("X-RateLimit-Remaining"))

		in := &openapi3filter.RequestValidationInput{Request: req, Route: route, Options: opts}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Options: opts}
		out.SetBodyBytes(raw)
		require.NoError(t, openapi3filter.ValidateResponse(ctx, out), "%d: %s", resp.StatusCode, raw)
	}
}
