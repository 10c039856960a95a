package httpapi_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
	"github.com/chatengine/chat/store/storetest"
)

// TestSearch runs the search cases through the API on every store.
func TestSearch(t *testing.T) {
	t.Parallel()
	stores := map[string]storeFactory{"Memory": memoryStore, "SQLite": sqliteStore, "Postgres": postgresStore}
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("Messages", func(t *testing.T) {
				t.Parallel()
				testSearchMessages(t, newEnv(t, st))
			})
			t.Run("Users", func(t *testing.T) {
				t.Parallel()
				testSearchUsers(t, newEnv(t, st))
			})
			t.Run("Channels", func(t *testing.T) {
				t.Parallel()
				testSearchChannels(t, newEnv(t, st))
			})
		})
	}
}

func searchIDs(t *testing.T, c *client.Client, req client.SearchMessagesRequest) []string {
	t.Helper()
	out, err := c.SearchMessages(ctx(t), req)
	require.NoError(t, err)
	ids := []string{}
	for _, m := range out.Messages {
		ids = append(ids, m.MessageID)
	}
	return ids
}

func testSearchMessages(t *testing.T, e *env) {
	bg := ctx(t)
	_, err := e.c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: "zoo", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
	require.NoError(t, err)
	_, err = e.c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: "farm", Type: chat.ChannelTypeStandard, UserIDs: []string{"bob"}})
	require.NoError(t, err)
	tok, err := e.c.MintUserToken(bg, "alice", time.Hour)
	require.NoError(t, err)
	alice := client.New(e.base, tok.Token, client.WithHTTPClient(e.srv.Client()))

	post := func(c *client.Client, ch, text string) string {
		m, err := c.CreateMessage(bg, client.CreateMessageRequest{ChannelID: ch, Type: chat.MessageTypeText, Data: map[string]any{"text": text}})
		require.NoError(t, err)
		// The SQLite store indexes after the commit (the server's
		// indexer); the test brings its index up to date at once.
		require.NoError(t, storetest.CatchUpSearch(bg, e.store))
		return m.MessageID
	}
	z1 := post(e.c, "zoo", "The Zebra Keeper feeds the zebras")
	z2 := post(alice, "zoo", "zebra stripes, KEEPER notes")
	z3 := post(e.c, "zoo", "Lions only")
	f1 := post(e.c, "farm", "zebra on the farm with its keeper")
	img, err := e.c.CreateImageMessage(bg, "zoo", "z.png", bytes.NewReader(pngImage(t, 8, 8, false)), &client.ImageOptions{Caption: "Zebra photo", ContentType: "image/png"})
	require.NoError(t, err)
	require.NoError(t, storetest.CatchUpSearch(bg, e.store))

	q := func(query string) client.SearchMessagesRequest { return client.SearchMessagesRequest{Query: query} }
	// Case-insensitive, newest first, every word required.
	require.Equal(t, []string{img.MessageID, f1, z2, z1}, searchIDs(t, e.c, q("ZEBRA")))
	require.Equal(t, []string{f1, z2, z1}, searchIDs(t, e.c, q("zebra keeper")))
	require.Equal(t, []string{f1, z2, z1}, searchIDs(t, e.c, q("keeper, ZEBRA!")))
	require.Empty(t, searchIDs(t, e.c, q("zebra lions")))
	// The last word is a prefix; the others are not.
	require.Equal(t, []string{f1, z2, z1}, searchIDs(t, e.c, q("zebra kee")))
	require.Empty(t, searchIDs(t, e.c, q("zeb keeper")))
	require.Equal(t, []string{z3}, searchIDs(t, e.c, q("li")))
	// Scopes: channel, author.
	require.Equal(t, []string{f1}, searchIDs(t, e.c, client.SearchMessagesRequest{Query: "zebra", ChannelID: "farm"}))
	require.Equal(t, []string{z2}, searchIDs(t, e.c, client.SearchMessagesRequest{Query: "zebra", UserID: "alice"}))

	// An end user sees only the channels where it is a member.
	require.Equal(t, []string{img.MessageID, z2, z1}, searchIDs(t, alice, q("zebra")))
	_, err = alice.SearchMessages(bg, client.SearchMessagesRequest{Query: "zebra", ChannelID: "farm"})
	requireCode(t, err, chat.CodePermissionDenied)
	_, err = alice.SearchMessages(bg, client.SearchMessagesRequest{Query: "zebra", ChannelID: "nowhere"})
	requireCode(t, err, chat.CodeNotFound)
	require.NoError(t, e.c.BanUsers(bg, "zoo", []string{"alice"}))
	require.Empty(t, searchIDs(t, alice, q("zebra")), "a banned user is no longer a member")

	// Edits and deletes keep the index right.
	_, err = e.c.UpdateMessage(bg, z1, client.UpdateMessageRequest{Data: map[string]any{"text": "giraffe keeper"}})
	require.NoError(t, err)
	require.Equal(t, []string{f1}, searchIDs(t, e.c, q("zebra keeper")), "z2 went with alice's ban; z1's old words are gone")
	require.Equal(t, []string{z1}, searchIDs(t, e.c, q("giraffe")))
	require.NoError(t, e.c.DeleteMessage(bg, f1))
	require.Empty(t, searchIDs(t, e.c, q("farm")))
	newCap := "Okapi photo"
	_, err = e.c.UpdateMessage(bg, img.MessageID, client.UpdateMessageRequest{Caption: &newCap})
	require.NoError(t, err)
	require.Equal(t, []string{img.MessageID}, searchIDs(t, e.c, q("okapi")))

	// Paging: no gap, no repeat, and back.
	var want []string
	for i := 0; i < 11; i++ {
		want = append([]string{post(e.c, "farm", "page item")}, want...)
	}
	all := searchIDs(t, e.c, client.SearchMessagesRequest{Query: "page item", Options: &client.SearchOptions{Limit: 100}})
	require.ElementsMatch(t, want, all)
	var walked []string
	req := client.SearchMessagesRequest{Query: "page it", Options: &client.SearchOptions{Limit: 4}}
	var prev string
	for pages := 0; pages < 10; pages++ {
		out, err := e.c.SearchMessages(bg, req)
		require.NoError(t, err)
		for _, m := range out.Messages {
			walked = append(walked, m.MessageID)
		}
		if out.Paging.Next == "" {
			prev = out.Paging.Previous
			break
		}
		req.Options = &client.SearchOptions{Limit: 4, Token: out.Paging.Next}
	}
	require.Equal(t, all, walked)
	require.NotEmpty(t, prev)
	back, err := e.c.SearchMessages(bg, client.SearchMessagesRequest{Query: "page it", Options: &client.SearchOptions{Limit: 4, Token: prev}})
	require.NoError(t, err)
	require.Len(t, back.Messages, 4)
	require.Equal(t, all[4], back.Messages[0].MessageID, "the page before the last one")
	require.Equal(t, all[7], back.Messages[3].MessageID)
	// Users side-loaded.
	require.NotEmpty(t, back.Users)
	// A token is bound to its query.
	_, err = e.c.SearchMessages(bg, client.SearchMessagesRequest{Query: "page", Options: &client.SearchOptions{Token: prev}})
	requireCode(t, err, chat.CodeBadRequest)

	// Hostile input.
	for _, body := range []string{
		`{}`, `{"query":""}`, `{"query":"!!! ..."}`, `{"query":"a\u0000b"}`, `{"query":5}`,
		`{"query":"` + strings.Repeat("x", chat.MaxSearchQueryBytes+1) + `"}`,
		`{"query":"` + manyWords(chat.MaxSearchWords+1) + `"}`,
		`{"query":"zebra","options":{"limit":101}}`, `{"query":"zebra","options":{"limit":-1}}`,
		`{"query":"zebra","options":{"token":"forged.token"}}`,
	} {
		r := e.do("POST", "/messages/search", "application/json", body)
		requireError(t, r, chat.CodeBadRequest, "")
	}
	r := e.do("POST", "/messages/search", "application/json", "{\"query\":\"a\xffb\"}")
	require.Equal(t, 400, r.status, "invalid UTF-8: %s", r.body)
	r = e.do("POST", "/messages/search", "application/json", `{"query":"`+strings.Repeat("x", chat.MaxSearchQueryBytes)+`"}`)
	require.Equal(t, 200, r.status, "at the limit: %s", r.body)
	r = e.do("POST", "/messages/search", "application/json", `{"query":"`+manyWords(chat.MaxSearchWords)+`"}`)
	require.Equal(t, 200, r.status, "at the word limit: %s", r.body)
	// Form encoding works as for other queries.
	r = e.form("POST", "/messages/search", map[string][]string{"query": {"okapi"}, "options[limit]": {"5"}})
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Contains(t, string(r.body), img.MessageID)
}

func testSearchUsers(t *testing.T, e *env) {
	bg := ctx(t)
	for id, name := range map[string]string{"zk": "The Zebra Keeper", "lion-1": "Leo", "Omega": "Ωmega Σίσυφος"} {
		_, err := e.c.UpdateUser(bg, client.UpdateUserRequest{UserID: id, DisplayName: &name})
		require.NoError(t, err)
	}
	find := func(s string) []string {
		out, err := e.c.QueryUsers(bg, client.QueryUsersRequest{Search: s})
		require.NoError(t, err)
		ids := []string{}
		for _, u := range out.Users {
			ids = append(ids, u.UserID)
		}
		return ids
	}
	require.Equal(t, []string{"zk"}, find("zeb"))
	require.Equal(t, []string{"zk"}, find("KEEP"))
	require.Equal(t, []string{"zk"}, find("the zebra k"))
	require.Equal(t, []string{"zk"}, find("ZK"), "prefix of the userId")
	require.Empty(t, find("eeper"), "not infix")
	require.Equal(t, []string{"lion-1"}, find("lion-"))
	require.Equal(t, []string{"Omega"}, find("ΣΊΣΥΦ"))
	require.Equal(t, []string{"Omega"}, find("omeg"))
	// A rename changes what finds the user.
	name := "Giraffe Friend"
	_, err := e.c.UpdateUser(bg, client.UpdateUserRequest{UserID: "zk", DisplayName: &name})
	require.NoError(t, err)
	require.Empty(t, find("zeb"))
	require.Equal(t, []string{"zk"}, find("friend"))
	// Hostile input.
	requireError(t, e.do("GET", "/users?search=a%00b", "", ""), chat.CodeBadRequest, "")
	requireError(t, e.do("GET", "/users?search=a%FFb", "", ""), chat.CodeBadRequest, "")
	requireError(t, e.do("GET", "/users?search="+strings.Repeat("x", 257), "", ""), chat.CodeBadRequest, "")
}

// manyWords returns n distinct words.
func manyWords(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = "w" + strings.Repeat("x", i)
	}
	return strings.Join(ws, " ")
}

func testSearchChannels(t *testing.T, e *env) {
	bg := ctx(t)
	for _, c := range []client.CreateChannelRequest{
		{ChannelID: "zoo-keepers", DisplayName: "The Zebra Keepers"},
		{ChannelID: "Night-Shift", DisplayName: "Owls"},
		{ChannelID: "sofia", DisplayName: "ΣΟΦΙΑ Room"},
		{ChannelID: "old-zebras", DisplayName: "Old Zebras"},
	} {
		c.Type = chat.ChannelTypeStandard
		_, err := e.c.CreateChannel(bg, c)
		require.NoError(t, err)
	}
	require.NoError(t, e.c.CloseChannel(bg, "old-zebras"))
	find := func(search string, closed bool, opt *client.PageOptions) ([]string, *chat.Paging) {
		t.Helper()
		out, err := e.c.QueryChannels(bg, client.QueryChannelsRequest{Search: search, IncludeClosed: closed, Options: opt})
		require.NoError(t, err)
		ids := []string{}
		for _, c := range out.Channels {
			ids = append(ids, c.ChannelID)
		}
		return ids, out.Paging
	}
	ids, _ := find("zeb", false, nil)
	require.Equal(t, []string{"zoo-keepers"}, ids, "a word of the name, closed channels left out")
	ids, _ = find("ZEB", true, nil)
	require.ElementsMatch(t, []string{"old-zebras", "zoo-keepers"}, ids, "closed too with includeClosed")
	ids, _ = find("keep", false, nil)
	require.Equal(t, []string{"zoo-keepers"}, ids, "a later word")
	ids, _ = find("night-s", false, nil)
	require.Equal(t, []string{"Night-Shift"}, ids, "a prefix of the id")
	ids, _ = find("σοφ", false, nil)
	require.Equal(t, []string{"sofia"}, ids)
	ids, _ = find("eep", false, nil)
	require.Empty(t, ids, "not infix")
	// Paging keeps the search.
	for i := 1; i <= 5; i++ {
		_, err := e.c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: fmt.Sprintf("team-%d", i), DisplayName: "Team", Type: chat.ChannelTypeStandard})
		require.NoError(t, err)
	}
	ids, pg := find("TEAM", false, &client.PageOptions{Limit: 2})
	require.Equal(t, []string{"team-5", "team-4"}, ids)
	require.NotEmpty(t, pg.Next)
	ids, pg = find("TEAM", false, &client.PageOptions{Token: pg.Next})
	require.Equal(t, []string{"team-3", "team-2"}, ids)
	ids, last := find("TEAM", false, &client.PageOptions{Token: pg.Next})
	require.Equal(t, []string{"team-1"}, ids)
	require.Empty(t, last.Next)
	// A token of one search does not continue another.
	_, err := e.c.QueryChannels(bg, client.QueryChannelsRequest{Search: "z", IncludeClosed: true, Options: &client.PageOptions{Token: pg.Next}})
	require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err))
	// A rename changes what finds the channel.
	name := "Giraffe Friends"
	_, err = e.c.UpdateChannel(bg, "zoo-keepers", client.UpdateChannelRequest{DisplayName: &name})
	require.NoError(t, err)
	ids, _ = find("zeb", false, nil)
	require.Empty(t, ids)
	ids, _ = find("friend", false, nil)
	require.Equal(t, []string{"zoo-keepers"}, ids)
	// Hostile input.
	requireError(t, e.do("POST", "/channels", "application/json", `{"search":"a\u0000b"}`), chat.CodeBadRequest, "search")
	requireError(t, e.do("POST", "/channels", "application/json", "{\"search\":\"a\xffb\"}"), chat.CodeBadRequest, "")
	requireError(t, e.do("POST", "/channels", "application/json", `{"search":"`+strings.Repeat("x", 257)+`"}`), chat.CodeBadRequest, "search")
	requireError(t, e.do("POST", "/channels", "application/json", `{"search":["a"]}`), chat.CodeBadRequest, "search")
}
