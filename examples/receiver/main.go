// Command receiver is a webhook receiver: it verifies each delivery's
// signature and prints the events.
//
//	CHAT_WEBHOOK_SECRET=s3cret go run ./examples/receiver &
//	go run ./examples/server -webhook-url http://127.0.0.1:9000/hook -webhook-secret s3cret -allow-private-webhooks
package main

import (
	"context"
	"log"
	"net/http"
	"os"
	"sync"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/webhook"
)

func main() {
	secret := os.Getenv("CHAT_WEBHOOK_SECRET")
	if secret == "" {
		log.Fatal("set CHAT_WEBHOOK_SECRET to the webhook's secret")
	}
	var mu sync.Mutex
	seen := map[string]bool{} // deliveries are at least once: deduplicate on requestId
	h := webhook.NewReceiver([]byte(secret), func(ctx context.Context, ev *webhook.Event) error {
		mu.Lock()
		dup := seen[ev.RequestID]
		mu.Unlock()
		if dup {
			return nil
		}
		if err := handle(ev); err != nil {
			return err // 500: the delivery is retried with the same requestId
		}
		mu.Lock()
		seen[ev.RequestID] = true
		mu.Unlock()
		return nil // 204: delivered
	}, webhook.WithStandardSignature(0)) // also check webhook-timestamp (replay protection)
	log.Fatal(http.ListenAndServe("127.0.0.1:9000", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hook" {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})))
}

// handle processes one event.
func handle(ev *webhook.Event) error {
	switch ev.Event {
	case chat.EventMessageDidCreate:
		d, err := ev.Message()
		if err != nil {
			return err
		}
		m := d.Messages[0]
		switch m.Type {
		case chat.MessageTypeText:
			text, _ := m.Text()
			log.Printf("%s in %s by %s: %q", ev.Event, m.ChannelID, m.UserID, text)
		case chat.MessageTypeImage:
			img, _ := m.Image()
			log.Printf("%s in %s by %s: image %s, %dx%d, %d renditions", ev.Event, m.ChannelID, m.UserID, img.FileName, img.Width, img.Height, len(img.Sizes))
		case chat.MessageTypeFile:
			f, _ := m.File()
			log.Printf("%s in %s by %s: file %s, %d bytes", ev.Event, m.ChannelID, m.UserID, f.FileName, f.Size)
		default:
			log.Printf("%s in %s by %s: %s data %v", ev.Event, m.ChannelID, m.UserID, m.Type, m.Data)
		}
	case chat.EventChannelDidCreate, chat.EventChannelDidAddUsers, chat.EventChannelDidJoin:
		d, err := ev.Channel()
		if err != nil {
			return err
		}
		log.Printf("%s %s: %v", ev.Event, d.Channel.ChannelID, d.UserIDs)
	default:
		log.Printf("%s (%d bytes of data)", ev.Event, len(ev.Data))
	}
	return nil
}
