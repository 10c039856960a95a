package chat_test

import (
	"context"
	"fmt"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// The words every store indexes: runs of letters, digits and nonspacing
// marks, case-folded, each once.
func ExampleWords() {
	fmt.Printf("%q\n", chat.Words("Zebra-crossing; the ZEBRA keeper, 2nd shift!"))
	// Output: ["zebra" "crossing" "the" "keeper" "2nd" "shift"]
}

// A user is found by the beginning of any word of its name.
func ExampleNameKeys() {
	fmt.Printf("%q\n", chat.NameKeys("The Zebra Keeper"))
	// Output: ["the zebra keeper" "zebra keeper" "keeper"]
}

func ExampleService_SearchMessages() {
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	if err != nil {
		panic(err)
	}
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	if err != nil {
		panic(err)
	}
	if _, err := svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "zoo", Type: chat.ChannelTypeStandard}); err != nil {
		panic(err)
	}
	for _, text := range []string{"The Zebra Keeper is here", "zebras everywhere", "Lions only"} {
		if _, err := svc.CreateMessage(ctx, admin.UserID, chat.CreateMessageInput{ChannelID: "zoo", Type: chat.MessageTypeText,
			Data: map[string]any{"text": text}}); err != nil {
			panic(err)
		}
	}
	// Every word is required; the last one may be the start of a word.
	found, err := svc.SearchMessages(ctx, admin.UserID, chat.SearchMessagesQuery{Query: "zebra KEE", ChannelID: "zoo"})
	if err != nil {
		panic(err)
	}
	for _, m := range found.Messages {
		fmt.Println(m.Data["text"])
	}
	// Output: The Zebra Keeper is here
}
