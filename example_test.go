package chat_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

func Example() {
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
	if _, err := svc.AddRules(ctx, admin.UserID, chat.Blacklist, []string{"darn"}, true); err != nil {
		panic(err)
	}
	_, err = svc.CreateMessage(ctx, "alice", chat.CreateMessageInput{
		ChannelID: "general", Type: chat.MessageTypeText, Data: chat.TextData("darn it"),
	})
	var rule chat.RuleRef
	if errors.Is(err, chat.ErrBlacklisted) && errors.As(err, &rule) {
		fmt.Println("refused by rule", rule.RuleID)
	}

	out, err := svc.CreateMessage(ctx, "alice", chat.CreateMessageInput{
		ChannelID: "general", Type: chat.MessageTypeText, Data: chat.TextData("hello"),
	})
	if err != nil {
		panic(err)
	}
	m := out.Messages[0]
	text, _ := m.Text()
	fmt.Println(m.ChannelSegment, text)
	// Output:
	// refused by rule darn
	// 1 hello
}

// Mute periods are durations; MuteForever and Unmute are the two that
// are not.
func ExampleService_MuteUsers() {
	ctx := context.Background()
	svc, _ := chat.New(ctx, memory.New(), chat.Config{})
	admin, _, _ := svc.CreateAdmin(ctx, "", "ops", "")
	_, _ = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{
		ChannelID: "general", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"},
	})

	if err := svc.MuteUsers(ctx, admin.UserID, "general", []string{"alice"}, 10*time.Minute); err != nil {
		panic(err)
	}
	_, err := svc.CreateMessage(ctx, "alice", chat.CreateMessageInput{
		ChannelID: "general", Type: chat.MessageTypeText, Data: chat.TextData("hi"),
	})
	fmt.Println(errors.Is(err, chat.ErrUserMuted))

	_ = svc.MuteUsers(ctx, admin.UserID, "general", []string{"alice"}, chat.Unmute)
	_, err = svc.CreateMessage(ctx, "alice", chat.CreateMessageInput{
		ChannelID: "general", Type: chat.MessageTypeText, Data: chat.TextData("hi"),
	})
	fmt.Println(err)

	err = svc.MuteUsers(ctx, admin.UserID, "general", []string{"zed"}, chat.MuteForever)
	var field chat.FieldError
	if errors.As(err, &field) {
		fmt.Println(field.Field, field.UserIDs)
	}
	// Output:
	// true
	// <nil>
	// userIds [zed]
}

// Slow mode refuses a second post within the window with a RetryAfter.
func ExampleService_SetChannelRateLimit() {
	ctx := context.Background()
	svc, _ := chat.New(ctx, memory.New(), chat.Config{})
	admin, _, _ := svc.CreateAdmin(ctx, "", "ops", "")
	_, _ = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{
		ChannelID: "general", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"},
	})
	out, err := svc.SetChannelRateLimit(ctx, admin.UserID, "general", 30*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Channels[0].RateLimit())

	post := chat.CreateMessageInput{ChannelID: "general", Type: chat.MessageTypeText, Data: chat.TextData("one")}
	_, _ = svc.CreateMessage(ctx, "alice", post)
	_, err = svc.CreateMessage(ctx, "alice", post)
	var wait chat.RetryAfter
	if errors.As(err, &wait) {
		fmt.Println(wait.Seconds() > 0 && wait.Wait <= 30*time.Second)
	}
	// Output:
	// 30s
	// true
}

// Custom data can come from, and go back to, a type of one's own.
func ExampleMessage_DecodeData() {
	ctx := context.Background()
	svc, _ := chat.New(ctx, memory.New(), chat.Config{})
	admin, _, _ := svc.CreateAdmin(ctx, "", "ops", "")
	_, _ = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "general", Type: chat.ChannelTypeStandard})

	type Poll struct {
		Question string   `json:"question"`
		Options  []string `json:"options"`
	}
	data, err := chat.CustomData(Poll{Question: "Lunch?", Options: []string{"yes", "no"}})
	if err != nil {
		panic(err)
	}
	out, err := svc.CreateMessage(ctx, admin.UserID, chat.CreateMessageInput{ChannelID: "general", Type: chat.MessageTypeCustom, Data: data})
	if err != nil {
		panic(err)
	}
	var p Poll
	if err := out.Messages[0].DecodeData(&p); err != nil {
		panic(err)
	}
	fmt.Println(p.Question, p.Options)
	// Output:
	// Lunch? [yes no]
}

// An image message's data reads as an ImageData.
func ExampleMessage_Image() {
	ctx := context.Background()
	svc, _ := chat.New(ctx, memory.New(), chat.Config{})
	admin, _, _ := svc.CreateAdmin(ctx, "", "ops", "")
	_, _ = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "general", Type: chat.ChannelTypeStandard})

	// Package media makes the renditions from an upload.
	out, err := svc.CreateImageMessage(ctx, admin.UserID, chat.CreateImageMessageInput{
		ChannelID: "general", Caption: "the view", FileName: "view.png", MimeType: "image/png", Width: 640, Height: 480,
		Renditions: []chat.ImageRendition{{Name: chat.ImageSmall, ContentType: "image/png", Width: 160, Height: 120, Data: make([]byte, 900)}},
	})
	if err != nil {
		panic(err)
	}
	img, ok := out.Messages[0].Image()
	fmt.Println(ok, img.Caption, img.Width, img.Height)
	small, _ := img.Rendition(chat.ImageSmall)
	fmt.Println(small.Width, small.Height, small.FileSize)
	// Output:
	// true the view 640 480
	// 160 120 900
}

// A dry run answers what posting would answer, and changes nothing; the
// mute that refuses it is in the audit log, with who did it.
func ExampleService_CheckMessage() {
	ctx := context.Background()
	svc, _ := chat.New(ctx, memory.New(), chat.Config{})
	admin, _, _ := svc.CreateAdmin(ctx, "", "ops", "")
	_, _ = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{
		ChannelID: "general", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"},
	})
	_ = svc.MuteUsers(ctx, admin.UserID, "general", []string{"alice"}, time.Hour)

	res, err := svc.CheckMessage(ctx, admin.UserID, "alice", chat.CreateMessageInput{
		ChannelID: "general", Type: chat.MessageTypeText, Data: chat.TextData("hello"),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Allowed, int(res.Code), res.Message)

	log, _ := svc.QueryAudit(ctx, admin.UserID, chat.AuditQuery{TargetID: "alice"})
	e := log.Audit[0]
	fmt.Println(e.ActorID, e.Action, e.ChannelID, e.Details["mutePeriod"])
	// Output:
	// false 400302 user "alice" is muted in channel "general"
	// ops channel.muteUsers general 3.6e+06
}
