package postgres_test

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
)

// TestCreateMessageRoundTripsWithWebhook counts the round trips of
// Service.CreateMessage in a deployment with a webhook: the deliveries go
// in the statement of the message and its events, so a post is still
// BEGIN, the post's reads, one write statement and COMMIT, and every post
// leaves one pending delivery. The same holds for an author with roles.
func TestCreateMessageRoundTripsWithWebhook(t *testing.T) {
	ctx := ctxT(t)
	conn, err := pq.NewConnector(testDSN(t))
	require.NoError(t, err)
	log := &wireLog{preps: map[string]int{}}
	db := sql.OpenDB(&wireConnector{inner: conn, log: log})
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	s, err := postgres.New(ctx, db, &postgres.Options{Schema: newSchema(t)})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	svc, err := chat.New(ctx, s, chat.Config{})
	require.NoError(t, err)
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	hook, err := svc.EnsureWebhook(ctx, "", "https://hooks.example.com/chat", "secret")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard,
		UserIDs: []string{"u", admin.UserID}})
	require.NoError(t, err)
	// Half of the posts are by the admin (a member), whose permissions
	// come from its roles: they are read with the post's reads.
	var n int
	post := func() {
		author := "u"
		if n++; n%2 == 0 {
			author = admin.UserID
		}
		_, err := svc.CreateMessage(ctx, author, chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText,
			Data: chat.TextData("hello")})
		require.NoError(t, err)
	}
	post()
	s.WaitPrepared()
	for i := 0; i < 4; i++ {
		post()
	}
	from := log.len()
	const posts = 10
	for i := 0; i < posts; i++ {
		post()
	}
	creates := 0
	for _, tx := range log.txs(from) {
		isCreate := false
		for _, op := range tx {
			if strings.Contains(op.sql, "INSERT INTO") && strings.Contains(op.sql, ".messages") {
				isCreate = true
				require.Contains(t, op.sql, ".deliveries", "the deliveries go with the message")
			}
		}
		if !isCreate {
			continue
		}
		creates++
		var kinds []string
		for _, op := range tx {
			if op.kind != "prepare" {
				kinds = append(kinds, op.kind)
			}
		}
		require.Equal(t, []string{"begin", "exec", "exec", "commit"}, kinds,
			"a create with a webhook is BEGIN, two prepared statements and COMMIT: 4 round trips")
	}
	require.Equal(t, posts, creates)

	var ds []*chat.Delivery
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		var err error
		ds, err = tx.ListDeliveries(ctx, hook.WebhookID, "", 100)
		return err
	}))
	created := 0
	for _, d := range ds {
		require.Equal(t, chat.DeliveryPending, d.State)
		if d.Event == "message.didCreate" {
			created++
		}
	}
	require.Equal(t, 5+posts, created, "one delivery per post")
}
