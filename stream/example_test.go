package stream_test

import (
	"context"
	"encoding/json"
	"fmt"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

// A Go program follows what alice may see: her channel's messages, not
// the others'.
func Example() {
	ctx := context.Background()
	svc, _ := chat.New(ctx, memory.New(), chat.Config{})
	admin, _, _ := svc.CreateAdmin(ctx, "", "ops", "")
	_, _ = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "general", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
	_, _ = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "staff", Type: chat.ChannelTypeStandard, UserIDs: []string{"bob"}})

	hub := stream.New(svc, stream.Config{})
	if err := hub.Start(ctx); err != nil {
		panic(err)
	}
	defer func() { _ = hub.Stop(ctx) }()
	sub, err := hub.Subscribe(ctx, stream.Filter{UserID: "alice"}, nil)
	if err != nil {
		panic(err)
	}
	defer sub.Close()

	for _, m := range []struct{ channel, text string }{{"staff", "not for alice"}, {"general", "hello"}} {
		_, _ = svc.CreateMessage(ctx, "bob", chat.CreateMessageInput{ChannelID: m.channel, Type: chat.MessageTypeText, Data: chat.TextData(m.text)})
	}
	f, err := sub.Next(ctx)
	if err != nil {
		panic(err)
	}
	var d chat.MessageEventData
	_ = json.Unmarshal(f.Data, &d)
	text, _ := d.Messages[0].Text()
	fmt.Println(f.Event, d.Messages[0].ChannelID, text)
	// Output: message.didCreate general hello
}
