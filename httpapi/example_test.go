package httpapi_test

import (
	"context"
	"log"
	"net/http"

	"github.com/go-chi/chi/v5"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/memory"
)

// The handler serves paths relative to its mount point; here /api/v2 of
// a chi router (http.StripPrefix does the same for net/http).
func ExampleNew() {
	svc, err := chat.New(context.Background(), memory.New(), chat.Config{})
	if err != nil {
		log.Fatal(err)
	}
	r := chi.NewRouter()
	r.Mount("/api/v2", httpapi.New(svc, httpapi.Config{AccessLog: true}))
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: r}
	_ = srv // srv.ListenAndServe()
}
