package push_test

import (
	"context"
	"fmt"

	"github.com/chatengine/chat/push"
)

func ExampleForMessage() {
	n := push.ForMessage("General", "Ada", "Lunch at noon? The usual place.", "ch_1", "msg_9")
	fmt.Println(n.Title)
	fmt.Println(n.Body)
	fmt.Println(n.Data["channelId"], n.Data["messageId"])
	// Output:
	// General
	// Ada: Lunch at noon? The usual place.
	// ch_1 msg_9
}

// A delivery worker acts on the Kind of a failed send: remove the device,
// schedule another attempt, or give the delivery up.
func ExampleKindOf() {
	senders, _ := push.New(push.Config{}) // no provider configured
	err := senders.Send(context.Background(), push.Device{Provider: push.FCM, Token: "t"},
		push.ForMessage("General", "Ada", "hi", "ch_1", "msg_9"))
	switch {
	case err == nil:
		fmt.Println("delivered")
	case push.KindOf(err) == push.Gone:
		fmt.Println("remove the device")
	case push.KindOf(err) == push.Retry:
		after, _ := push.RetryAfter(err)
		fmt.Println("retry, not before", after)
	default:
		fmt.Println("give up:", err)
	}
	// Output:
	// give up: push firebase: permanent: provider not configured
}
