// Command embed shows the chat engine used as a library: a store, the
// Service, the admin HTTP API mounted in the host's own router, and the
// webhook dispatcher. It is the program the README walks through.
package main

import (
	"context"
	"errors"
	"log"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/go-chi/chi/v5"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/sqlite"
	"github.com/chatengine/chat/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	// Any chat.Store: memory.New(), sqlite.Open or postgres.Open.
	st, err := sqlite.Open(ctx, "embed.db", nil) // WAL, synchronous=FULL
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	svc, err := chat.New(ctx, st, chat.Config{
		WebhookURLCheck: func(u string) error { return webhook.CheckURL(u, false) },
	})
	if err != nil {
		log.Fatal(err)
	}
	// The dispatcher delivers the events the Service writes to the outbox;
	// the store wakes it when deliveries are committed (chat.DeliveryWatcher).
	// A store that cannot would need OnCommit: func() { hooks.Wake() } in
	// chat.Config, with hooks declared before.
	hooks := webhook.New(svc, st, webhook.Config{})
	if err := hooks.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer hooks.Stop(context.Background())

	// Announces mutes that end by time (channel.didUnmute, channel.didUnmuteUsers).
	expirer := chat.NewExpirer(svc, chat.ExpirerConfig{})
	if err := expirer.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer expirer.Stop(context.Background())

	// The Service is usable directly from Go...
	if ok, _ := svc.HasAdmins(ctx); !ok {
		_, token, err := svc.CreateAdmin(ctx, "", "ops", "")
		if err != nil {
			log.Fatal(err)
		}
		log.Printf("admin token (shown once): %s", token)
		if _, err := svc.CreateChannel(ctx, "ops", chat.CreateChannelInput{ChannelID: "lobby", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}}); err != nil {
			log.Fatal(err)
		}
		// Lengths of time are durations (or chat.MuteForever, chat.Unmute).
		if err := svc.MuteUsers(ctx, "ops", "lobby", []string{"alice"}, 10*time.Minute); err != nil {
			log.Fatal(err)
		}
	}
	out, err := svc.CreateMessage(ctx, "ops", chat.CreateMessageInput{ChannelID: "lobby", Type: chat.MessageTypeText, Data: chat.TextData("server started")})
	var rule chat.RuleRef
	switch {
	case errors.As(err, &rule):
		log.Printf("the blacklist entry %q refused the message", rule.RuleID)
	case err != nil:
		log.Fatal(err)
	default:
		text, _ := out.Messages[0].Text()
		log.Printf("posted %q as message %d of lobby", text, out.Messages[0].ChannelSegment)
	}

	// ...and over HTTP, mounted wherever the host likes.
	r := chi.NewRouter()
	r.Mount("/api/v2", httpapi.New(svc, httpapi.Config{}))
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: r}
	go func() {
		<-ctx.Done()
		srv.Shutdown(context.Background())
	}()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
