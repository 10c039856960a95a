package chat_test

import (
	"context"
	"fmt"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

func Example() {
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	if err != nil {
		panic(err)
	}
	admin, _, err := svc.CreateAdmin(ctx, "ops", "")
	if err != nil {
		panic(err)
	}
	if _, err := svc.CreateChannel(ctx, admin.UserID, chat.CreateChannel{
		ChannelID: "general", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"},
	}); err != nil {
		panic(err)
	}
	if _, err := svc.AddRules(ctx, chat.Blacklist, []string{"darn"}, true); err != nil {
		panic(err)
	}
	_, err = svc.CreateMessage(ctx, "alice", chat.CreateMessage{
		ChannelID: "general", Type: chat.MessageTypeText, Data: map[string]any{"text": "darn it"},
	})
	fmt.Println(int(chat.ErrorCode(err)), err)

	out, _ := svc.CreateMessage(ctx, "alice", chat.CreateMessage{
		ChannelID: "general", Type: chat.MessageTypeText, Data: map[string]any{"text": "hello"},
	})
	fmt.Println(out.Messages[0].ChannelSegment, out.Messages[0].Data["text"])
	// Output:
	// 400308 text contains a blacklisted word (rule "darn")
	// 1 hello
}
