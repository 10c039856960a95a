package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/memory"
)

// server starts an API server over a memory store and returns its base
// URL and an admin token.
func server() (string, string, func()) {
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	if err != nil {
		panic(err)
	}
	_, token, err := svc.CreateAdmin(ctx, "", "ops", "ops")
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/api/v2", httpapi.New(svc, httpapi.Config{})))
	return srv.URL + "/api/v2", token, srv.Close
}

// A call that makes one thing returns it; what the API side-loads with
// it is in the other fields.
func Example() {
	base, token, stop := server()
	defer stop()
	ctx := context.Background()
	c := client.New(base, token)

	ch, err := c.CreateChannel(ctx, client.CreateChannelRequest{
		ChannelID: "general", Type: chat.ChannelTypeStandard, DisplayName: "General", UserIDs: []string{"alice", "bob"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(ch.DisplayName, ch.MemberCount, len(ch.ChannelUsers), len(ch.Users))

	m, err := c.SendText(ctx, "general", "hello")
	if err != nil {
		panic(err)
	}
	text, _ := m.Text()
	author, _ := m.Author()
	fmt.Println(m.ChannelSegment, text, author.UserID)

	// The same channel id again: a conflict, naming the field.
	_, err = c.CreateChannel(ctx, client.CreateChannelRequest{ChannelID: "general", Type: chat.ChannelTypeStandard})
	var field chat.FieldError
	fmt.Println(errors.Is(err, chat.ErrConflict), errors.As(err, &field), field.Field)

	// Mute for a duration; the API gets milliseconds.
	if err := c.MuteUsers(ctx, "general", []string{"alice"}, 10*time.Minute); err != nil {
		panic(err)
	}
	// Output:
	// General 2 2 2
	// 1 hello ops
	// true true channelId
}

// A download streams: read it like any io.Reader, then close it.
func ExampleClient_GetFile() {
	base, token, stop := server()
	defer stop()
	ctx := context.Background()
	c := client.New(base, token, client.WithTimeout(10*time.Second))
	if _, err := c.CreateChannel(ctx, client.CreateChannelRequest{ChannelID: "docs", Type: chat.ChannelTypeStandard}); err != nil {
		panic(err)
	}
	m, err := c.CreateFileMessage(ctx, "docs", "notes.txt", strings.NewReader("0123456789"), &client.FileOptions{ContentType: "text/plain"})
	if err != nil {
		panic(err)
	}
	f, _ := m.File()
	fmt.Println(f.FileName, f.Size)

	d, err := c.GetFile(ctx, m.MessageID, http.Header{"Range": {"bytes=2-5"}})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	b, err := io.ReadAll(d)
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Status, d.ContentRange, d.ContentLength, string(b))
	// Output:
	// notes.txt 10
	// 206 bytes 2-5/10 4 2345
}

// An admin bans a user, reads who did it in the audit log, checks a text
// against the rules as a user before it is posted, and purges a user's
// messages.
func ExampleClient_QueryAudit() {
	base, token, stop := server()
	defer stop()
	ctx := context.Background()
	c := client.New(base, token)
	if _, err := c.CreateChannel(ctx, client.CreateChannelRequest{ChannelID: "general", Type: chat.ChannelTypeStandard,
		UserIDs: []string{"alice", "mallory"}}); err != nil {
		panic(err)
	}
	if _, err := c.AddRules(ctx, chat.Whitelist, []string{"example.com"}, false); err != nil {
		panic(err)
	}
	if err := c.BanUsers(ctx, "general", []string{"mallory"}); err != nil {
		panic(err)
	}
	for e, err := range c.Audit(ctx, client.QueryAuditRequest{TargetID: "mallory"}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(e.ActorID, e.Action, e.TargetID, e.ChannelID)
	}
	res, err := c.CheckMessage(ctx, client.CheckMessageRequest{UserID: "alice", ChannelID: "general",
		Type: chat.MessageTypeText, Data: chat.TextData("see evil.io")})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Allowed, int(res.Code), res.Detail[0])
	n, err := c.PurgeUserMessages(ctx, "alice", client.PurgeMessagesRequest{ChannelID: "general"})
	if err != nil {
		panic(err)
	}
	fmt.Println("deleted", n)
	// Output:
	// ops channel.banUsers mallory general
	// false 400309 link not allowed: "evil.io"
	// deleted 0
}
