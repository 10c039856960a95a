package webhook_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/webhook"
)

// BenchmarkCreateMessagePreSend measures CreateMessage on the memory store
// without a pre-send hook and with one answering allow from this machine
// (over plain HTTP and over TLS, connections kept alive): what the hook
// adds to a create beside the endpoint's own time.
func BenchmarkCreateMessagePreSend(b *testing.B) {
	allow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"action":"allow"}`)
	})
	for _, mode := range []string{"none", "http", "https"} {
		b.Run(mode, func(b *testing.B) {
			var hook chat.PreSendHook
			switch mode {
			case "http", "https":
				var srv *httptest.Server
				cfg := webhook.PreSendConfig{Secret: "k", AllowPrivate: true, Logger: slog.New(slog.DiscardHandler)}
				if mode == "http" {
					srv = httptest.NewServer(allow)
				} else {
					srv = httptest.NewTLSServer(allow)
					pool := x509.NewCertPool()
					pool.AddCert(srv.Certificate())
					cfg.TLSConfig = &tls.Config{RootCAs: pool}
				}
				b.Cleanup(srv.Close)
				cfg.URL = srv.URL
				h, err := webhook.NewPreSendHook(cfg)
				if err != nil {
					b.Fatal(err)
				}
				hook = h
			}
			ctx := context.Background()
			svc, err := chat.New(ctx, memory.New(), chat.Config{PreSendHook: hook})
			if err != nil {
				b.Fatal(err)
			}
			a, _, err := svc.CreateAdmin(ctx, "", "root", "")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := svc.CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: "bench", Type: chat.ChannelTypeStandard, UserIDs: []string{"u"}}); err != nil {
				b.Fatal(err)
			}
			in := chat.CreateMessageInput{ChannelID: "bench", Type: chat.MessageTypeText, Data: map[string]any{"text": "a message of about fifty bytes, give or take some"}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := svc.CreateMessage(ctx, "u", in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
