package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/console"
	"github.com/chatengine/chat/store/memory"
)

// BenchmarkChannelPage renders a channel's page (50 messages, 20 members)
// and its live fragment, beside the Service calls the page makes without
// any rendering (the ceiling).
func BenchmarkChannelPage(b *testing.B) {
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{AdminPasswordCost: bcrypt.MinCost})
	require.NoError(b, err)
	a, _, err := svc.CreateAdminWithPassword(ctx, "", "root", "", "bench password")
	require.NoError(b, err)
	var members []string
	for i := range 20 {
		members = append(members, "user-"+strconv.Itoa(i))
	}
	_, err = svc.CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: "room", Type: chat.ChannelTypeStandard, UserIDs: members})
	require.NoError(b, err)
	for i := range 60 {
		_, err := svc.CreateMessage(ctx, members[i%20], chat.CreateMessageInput{ChannelID: "room", Type: chat.MessageTypeText,
			Data: map[string]any{"text": "message number " + strconv.Itoa(i) + " <with> some & text"}})
		require.NoError(b, err)
	}
	_, _, sid, err := svc.SignInAdmin(ctx, "root", "bench password")
	require.NoError(b, err)
	h := http.StripPrefix("/admin", console.New(svc, console.Config{}))
	get := func(b *testing.B, path string) {
		req := httptest.NewRequest("GET", path, nil)
		req.AddCookie(&http.Cookie{Name: "chat_admin_session", Value: sid})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d", path, rec.Code)
		}
	}
	b.Run("page", func(b *testing.B) {
		for b.Loop() {
			get(b, "/admin/channels/room")
		}
	})
	b.Run("fragment", func(b *testing.B) {
		for b.Loop() {
			get(b, "/admin/channels/room/messages")
		}
	})
	b.Run("ceiling-service-calls", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := svc.AdminSessionFor(ctx, sid, 0); err != nil {
				b.Fatal(err)
			}
			if _, err := svc.GetChannel(ctx, a.UserID, "room"); err != nil {
				b.Fatal(err)
			}
			if _, err := svc.QueryMessages(ctx, a.UserID, chat.MessageQuery{ChannelID: "room", IncludeDeleted: true, Last: 50}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSignIn measures a sign-in at the default bcrypt cost beside
// the bcrypt comparison alone (the ceiling).
func BenchmarkSignIn(b *testing.B) {
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	require.NoError(b, err)
	_, _, err = svc.CreateAdminWithPassword(ctx, "", "root", "", "bench password")
	require.NoError(b, err)
	hash, err := bcrypt.GenerateFromPassword([]byte("bench password"), chat.AdminPasswordCost)
	require.NoError(b, err)
	b.Run("sign-in", func(b *testing.B) {
		for b.Loop() {
			if _, _, _, err := svc.SignInAdmin(ctx, "root", "bench password"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ceiling-bcrypt", func(b *testing.B) {
		for b.Loop() {
			if err := bcrypt.CompareHashAndPassword(hash, []byte("bench password")); err != nil {
				b.Fatal(err)
			}
		}
	})
}
