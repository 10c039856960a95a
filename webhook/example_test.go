package webhook_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/webhook"
)

// A receiver verifies each delivery's signature, decodes the envelope and
// hands the event to a function. The function makes processing idempotent
// by remembering request ids: deliveries are at least once.
func ExampleNewReceiver() {
	secret := []byte("the webhook's secret")

	var mu sync.Mutex
	seen := map[string]bool{}
	handler := webhook.NewReceiver(secret, func(ctx context.Context, ev *webhook.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if seen[ev.RequestID] {
			return nil // a retry of an event already handled
		}
		seen[ev.RequestID] = true
		switch ev.Event {
		case chat.EventMessageDidCreate:
			data, err := ev.Message()
			if err != nil {
				return err
			}
			text, _ := data.Messages[0].Text()
			fmt.Printf("%s wrote %q\n", data.Users[0].DisplayName, text)
		case chat.EventChannelDidCreate, chat.EventChannelDidJoin, chat.EventChannelDidAddUsers:
			data, err := ev.Channel()
			if err != nil {
				return err
			}
			fmt.Printf("%s: channel %s, users %v\n", ev.Event, data.Channel.ChannelID, data.UserIDs)
		}
		return nil // 204: delivered
	})

	mux := http.NewServeMux()
	mux.Handle("POST /chat-events", handler)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// What the dispatcher sends (built by hand here).
	body := []byte(`{"requestId":"66f1c2a0b3d4e5f60718293a","webhookId":"wh1","event":"message.didCreate",` +
		`"data":{"messages":[{"messageId":"m1","channelId":"general","userId":"ada","type":"text","data":{"text":"hello"}}],` +
		`"users":[{"userId":"ada","displayName":"Ada"}]}}`)
	for range 2 { // the second POST is a retry of the same event
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/chat-events", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Service-Signature", webhook.Sign(secret, body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}
	// Output:
	// Ada wrote "hello"
	// 204
	// 204
}

// Sign computes the spec's signature header; Verify checks it.
func ExampleSign() {
	secret, body := []byte("It's a Secret to Everybody"), []byte("Hello, World!")
	sig := webhook.Sign(secret, body)
	fmt.Println(sig)
	fmt.Println(webhook.Verify(secret, body, sig))
	// Output:
	// sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59
	// true
}

// A Dispatcher delivers the events the Service commits, over the
// Service's store. Its Wake can be the Service's OnCommit hook (stores that
// signal commits themselves, like the memory and Postgres stores, do not
// need it; Wake on a Dispatcher not yet made does nothing). Start it, and
// Stop it on shutdown to let deliveries in flight finish.
func ExampleNew() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()

	// A receiver on this machine (AllowPrivate admits 127.0.0.1). It starts
	// once the webhook's secret is known.
	events := make(chan *webhook.Event, 1)
	recv := httptest.NewUnstartedServer(nil)
	defer recv.Close()
	recvURL := "http://" + recv.Listener.Addr().String() + "/chat-events"

	var d *webhook.Dispatcher
	svc, err := chat.New(ctx, store, chat.Config{
		OnCommit:        func() { d.Wake() },
		WebhookURLCheck: func(u string) error { return webhook.CheckURL(u, true) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	d = webhook.New(svc, store, webhook.Config{AllowPrivate: true})
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	hook, err := svc.CreateWebhook(ctx, admin.UserID, recvURL, []string{chat.EventChannelDidCreate})
	if err != nil {
		fmt.Println(err)
		return
	}
	secret := []byte(hook.Secret) // shown once, at creation
	recv.Config.Handler = webhook.NewReceiver(secret, func(ctx context.Context, ev *webhook.Event) error {
		events <- ev
		return nil
	})
	recv.Start()

	if err := d.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer d.Stop(ctx)

	if _, err := svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "general", Type: chat.ChannelTypeStandard, UserIDs: []string{"ada", "bob"}}); err != nil {
		fmt.Println(err)
		return
	}
	ev := <-events
	data, _ := ev.Channel()
	fmt.Println(ev.Event, data.Channel.ChannelID, data.UserIDs)
	// Output: channel.didCreate general [ada bob]
}
