package chat_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// A transport of one's own receives typing events through
// SubscribeEphemeral; calls within 2 s of a published one publish nothing.
func ExampleService_SubscribeEphemeral() {
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	if err != nil {
		panic(err)
	}
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	if err != nil {
		panic(err)
	}
	if _, err := svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{
		ChannelID: "general", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"},
	}); err != nil {
		panic(err)
	}
	cancel := svc.SubscribeEphemeral(func(ev chat.EphemeralEvent) {
		fmt.Println(ev.Event, string(ev.Data))
	})
	defer cancel()
	for range 3 {
		if err := svc.Typing(ctx, "alice", "general"); err != nil {
			panic(err)
		}
	}
	// Output:
	// channel.didStartTyping {"channelId":"general","userId":"alice"}
}

// Image and file messages carry signed links that open without a token.
func ExampleService_OpenLink() {
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{LinkKey: []byte("a key of the host's")})
	if err != nil {
		panic(err)
	}
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	if err != nil {
		panic(err)
	}
	if _, err := svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "general", Type: chat.ChannelTypeStandard}); err != nil {
		panic(err)
	}
	out, err := svc.CreateFileMessage(ctx, admin.UserID, chat.CreateFileMessageInput{ChannelID: "general", FileName: "notes.txt", MimeType: "text/plain", Data: []byte("hello")})
	if err != nil {
		panic(err)
	}
	m := out.Messages[0]
	file, _ := m.File()
	u, err := url.Parse(file.URL)
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.HasPrefix(u.Path, "/api/v2/messages/"+m.MessageID+"/files"))
	blob, _, err := svc.OpenLink(ctx, m.MessageID, "file", u.Query().Get("exp"), u.Query().Get("sig"))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(blob.Data))
	_, _, err = svc.OpenLink(ctx, m.MessageID, "file", u.Query().Get("exp"), "forged")
	fmt.Println(chat.ErrorCode(err))
	// Output:
	// true
	// hello
	// forbidden
}
