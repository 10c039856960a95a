package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var searchCases = []tcase{
	{"Words", testSearchWords},
	{"Scope", testSearchScope},
	{"EditAndDelete", testSearchEditDelete},
	{"Paging", testSearchPaging},
	{"AppendMessage", testSearchAppend},
	{"DuringEdits", testSearchDuringEdits},
	{"Indexer", testSearchIndexer},
}

// indexSearch brings the search index up to date when the store writes it
// after the commit (chat.SearchIndexer); other stores index in the
// transaction of the write.
func (e *env) indexSearch() {
	e.t.Helper()
	ix, ok := e.s.(chat.SearchIndexer)
	if !ok {
		return
	}
	for {
		n, err := ix.IndexSearch(e.ctx, 0)
		require.NoError(e.t, err)
		if n == 0 {
			return
		}
	}
}

// textMessage is a text message created at ms milliseconds.
func textMessage(id, channelID, userID string, seg int64, text string) *chat.Message {
	m := newMessage(id, channelID, userID, seg)
	m.Data = map[string]any{"text": text}
	return m
}

// search runs SearchMessages with the words of query (the last one a
// prefix when prefix is set) and returns the ids found.
func (e *env) search(f chat.MessageSearch) []string {
	e.t.Helper()
	e.indexSearch()
	return nilIfEmpty(messageIDs(read(e, func(tx chat.Tx) ([]*chat.Message, error) { return tx.SearchMessages(e.ctx, f) })))
}

func words(ws ...string) chat.MessageSearch { return chat.MessageSearch{Words: ws} }

func prefixWords(ws ...string) chat.MessageSearch { return chat.MessageSearch{Words: ws, Prefix: true} }

// testSearchWords: every word is required, the last one may be a prefix,
// case and Unicode folding, captions, other types and deleted messages.
func testSearchWords(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	img := newMessage("img", "c", "u", 5)
	img.Type = chat.MessageTypeImage
	img.Data = map[string]any{"caption": "Zebra at the zoo", "fileId": "f"}
	file := newMessage("file", "c", "u", 6)
	file.Type = chat.MessageTypeFile
	file.Data = map[string]any{"caption": "zebra report", "fileName": "zoo.pdf"}
	custom := newMessage("custom", "c", "u", 7)
	custom.Type = chat.MessageTypeCustom
	custom.Data = map[string]any{"text": "zebra custom"}
	twice := textMessage("twice", "c", "u", 9, "zebroid zebrine")
	gone := textMessage("gone", "c", "u", 8, "zebra gone")
	gone.IsDeleted = true
	e.createMessages(
		textMessage("m1", "c", "u", 1, "The Zebra keeper, at noon."),
		textMessage("m2", "c", "u", 2, "ZEBRAS and keepers"),
		textMessage("m3", "c", "u", 3, "Straße Σοφία café 42"),
		textMessage("m4", "c", "u", 4, "zebra-crossing;keeper"),
		img, file, custom, gone, twice,
	)
	cases := []struct {
		name string
		f    chat.MessageSearch
		want []string
	}{
		{"one word, newest first", words("zebra"), []string{"file", "img", "m4", "m1"}},
		{"every word required", words("zebra", "keeper"), []string{"m4", "m1"}},
		{"word order does not matter", words("keeper", "zebra"), []string{"m4", "m1"}},
		{"exact words are whole words", words("zeb"), nil},
		{"last word as a prefix, each message once", prefixWords("zeb"), []string{"twice", "file", "img", "m4", "m2", "m1"}},
		{"only the last word is a prefix", prefixWords("zeb", "keeper"), nil},
		{"prefix with an exact word", prefixWords("keeper", "zebra"), []string{"m4", "m1"}},
		{"prefix with an exact plural", prefixWords("keepers", "zeb"), []string{"m2"}},
		{"folded query words", words(chat.Fold("straße"), chat.Fold("ΣΟΦΊΑ")), []string{"m3"}},
		{"digits are words", words("42"), []string{"m3"}},
		{"accented word", words(chat.Fold("CAFÉ")), []string{"m3"}},
		{"captions of images and files", words("zoo"), []string{"img"}},
		{"no match", words("zebra", "lion"), nil},
		{"unknown word", words("nothing"), nil},
		{"limit", chat.MessageSearch{Words: []string{"zebra"}, Limit: 2}, []string{"file", "img"}},
	}
	for _, c := range cases {
		require.Equal(t, c.want, e.search(c.f), c.name)
	}
}

// testSearchScope: channel, author and membership scopes.
func testSearchScope(t *testing.T, e *env) {
	e.createChannels(newChannel("a", at(0)), newChannel("b", at(0)), newChannel("c", at(0)))
	e.createMessages(
		textMessage("a1", "a", "u1", 1, "apple pie"),
		textMessage("a2", "a", "u2", 2, "apple tart"),
		textMessage("b1", "b", "u1", 3, "apple juice"),
		textMessage("c1", "c", "u2", 4, "apple cider"),
	)
	e.update(func(tx chat.Tx) error {
		for _, cu := range []*chat.ChannelUser{
			member("a", "me", chat.MembershipMember),
			member("b", "me", chat.MembershipBanned),
			member("c", "me", chat.MembershipMember),
		} {
			if err := tx.PutChannelUser(e.ctx, cu); err != nil {
				return err
			}
		}
		return nil
	})
	cases := []struct {
		name string
		f    chat.MessageSearch
		want []string
	}{
		{"everything", words("apple"), []string{"c1", "b1", "a2", "a1"}},
		{"one channel", chat.MessageSearch{Words: []string{"apple"}, ChannelID: "a"}, []string{"a2", "a1"}},
		{"one author", chat.MessageSearch{Words: []string{"apple"}, UserID: "u1"}, []string{"b1", "a1"}},
		{"channel and author", chat.MessageSearch{Words: []string{"apple"}, ChannelID: "a", UserID: "u1"}, []string{"a1"}},
		{"channels of a member (banned is not member)", chat.MessageSearch{Words: []string{"apple"}, MemberOf: "me"}, []string{"c1", "a2", "a1"}},
		{"member of none", chat.MessageSearch{Words: []string{"apple"}, MemberOf: "stranger"}, nil},
		{"member, first page", chat.MessageSearch{Words: []string{"apple"}, MemberOf: "me", Limit: 2}, []string{"c1", "a2"}},
		{"member, next page", chat.MessageSearch{Words: []string{"apple"}, MemberOf: "me", Limit: 2,
			After: &chat.MessageSearchCursor{CreatedAt: at(2000).Time, MessageID: "a2"}}, []string{"a1"}},
		{"member, previous page", chat.MessageSearch{Words: []string{"apple"}, MemberOf: "me", Limit: 2,
			Before: &chat.MessageSearchCursor{CreatedAt: at(1000).Time, MessageID: "a1"}}, []string{"a2", "c1"}},
		{"member, prefix", chat.MessageSearch{Words: []string{"pie", "app"}, Prefix: true, MemberOf: "me"}, []string{"a1"}},
		{"member and channel", chat.MessageSearch{Words: []string{"apple"}, MemberOf: "me", ChannelID: "b"}, nil},
	}
	for _, c := range cases {
		require.Equal(t, c.want, e.search(c.f), c.name)
	}
}

// testSearchEditDelete: an edit replaces the words of a message, a soft
// delete (of any kind) removes it from the search.
func testSearchEditDelete(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.createMessages(
		textMessage("m1", "c", "u1", 1, "old words here"),
		textMessage("m2", "c", "u1", 2, "words of u1"),
		textMessage("m3", "c", "u2", 3, "words of u2"),
		textMessage("m4", "c", "u3", 4, "words of u3"),
	)
	m1 := e.message("m1")
	m1.Data = map[string]any{"text": "new text here"}
	m1.EditedAt = atp(9000)
	e.update(func(tx chat.Tx) error { return tx.UpdateMessage(e.ctx, m1) })
	require.Nil(t, e.search(words("old")), "the old words no longer find it")
	require.Equal(t, []string{"m1"}, e.search(words("new", "here")))
	require.Equal(t, []string{"m4", "m3", "m2"}, e.search(words("words")))

	m2 := e.message("m2")
	m2.IsDeleted, m2.Data = true, map[string]any{}
	e.update(func(tx chat.Tx) error { return tx.UpdateMessage(e.ctx, m2) })
	require.Equal(t, []string{"m4", "m3"}, e.search(words("words")), "deleted by UpdateMessage")

	write(e, func(tx chat.Tx) ([]string, error) { return tx.SoftDeleteMessages(e.ctx, "c", "u2", at(10_000).Time) })
	require.Equal(t, []string{"m4"}, e.search(words("words")), "deleted by SoftDeleteMessages")
	write(e, func(tx chat.Tx) ([]string, error) { return tx.SoftDeleteUserMessages(e.ctx, "u3", at(10_000).Time) })
	require.Nil(t, e.search(words("words")), "deleted by SoftDeleteUserMessages")
	write(e, func(tx chat.Tx) ([]string, error) { return tx.SoftDeleteMessages(e.ctx, "c", "", at(10_000).Time) })
	require.Nil(t, e.search(words("new")), "deleted with the whole channel")

	// A flag-only update keeps the words.
	e.createMessages(textMessage("m5", "c", "u1", 5, "still here"))
	m5 := e.message("m5")
	m5.FlagCount = 1
	e.update(func(tx chat.Tx) error { return tx.UpdateMessage(e.ctx, m5) })
	require.Equal(t, []string{"m5"}, e.search(words("still")))
}

// testSearchPaging: After and Before walk the newest-first order without
// gaps or repeats, ties on createdAt broken by messageId.
func testSearchPaging(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	var want []string
	for i := 1; i <= 12; i++ {
		id := "m" + string(rune('a'+i))
		m := textMessage(id, "c", "u", int64(i), "page word")
		if i%3 == 0 {
			m.CreatedAt = at(int64(i-1) * 1000) // a tie with the one before
		}
		e.createMessages(m)
		want = append([]string{id}, want...)
	}
	// Ties: newest first by createdAt, then messageId descending.
	all := e.search(words("page")) // indexes them first
	require.Len(t, all, 12)
	var fwd []string
	var cur *chat.MessageSearchCursor
	for pages := 0; ; pages++ {
		boundPages(t, pages)
		got := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
			return tx.SearchMessages(e.ctx, chat.MessageSearch{Words: []string{"page"}, Prefix: true, After: cur, Limit: 5})
		})
		for _, m := range got {
			fwd = append(fwd, m.MessageID)
		}
		if len(got) < 5 {
			break
		}
		last := got[len(got)-1]
		cur = &chat.MessageSearchCursor{CreatedAt: last.CreatedAt.Time, MessageID: last.MessageID}
	}
	require.Equal(t, all, fwd, "forward pages: no gap, no repeat")
	// Backwards from the oldest.
	oldest := e.message(all[len(all)-1])
	back := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
		return tx.SearchMessages(e.ctx, chat.MessageSearch{Words: []string{"word"},
			Before: &chat.MessageSearchCursor{CreatedAt: oldest.CreatedAt.Time, MessageID: oldest.MessageID}, Limit: 3})
	})
	require.Equal(t, []string{all[10], all[9], all[8]}, messageIDs(back), "Before: reverse order")
	for i := 1; i < len(all); i++ {
		a, b := e.message(all[i-1]), e.message(all[i])
		require.True(t, a.CreatedAt.After(b.CreatedAt.Time) || a.CreatedAt.Equal(b.CreatedAt.Time) && a.MessageID > b.MessageID, "order at %d", i)
	}
}

// testSearchAppend: messages stored by chat.AppendMessage are found.
func testSearchAppend(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	m := textMessage("m1", "c", "u", 0, "appended words")
	e.update(func(tx chat.Tx) error {
		_, err := chat.AppendMessage(e.ctx, tx, m, at(5).Time)
		return err
	})
	require.Equal(t, []string{"m1"}, e.search(words("appended")))
}

// testSearchDuringEdits: while two writers flip the texts of ten messages
// between "alpha one" and "beta two" (one Update per edit), every message
// a concurrent search returns holds the searched word in the text returned
// with it: the words are written in the transaction of the edit, never
// beside it. At the end the two searches partition the messages.
func testSearchDuringEdits(t *testing.T, e *env) {
	const msgs, edits, readers = 10, 40, 2
	e.createChannels(newChannel("c", at(0)))
	for i := 0; i < msgs; i++ {
		e.createMessages(textMessage(fmt.Sprintf("m%d", i), "c", "u", int64(i+1), "alpha one"))
	}
	e.indexSearch()
	err := group(2+readers, func(g int) error {
		if g < 2 {
			for k := 0; k < edits; k++ {
				id := fmt.Sprintf("m%d", (k*2+g)%msgs)
				if err := e.s.Update(e.ctx, func(tx chat.Tx) error {
					m, err := tx.GetMessage(e.ctx, id)
					if err != nil {
						return err
					}
					text := "alpha one"
					if m.Data["text"] == "alpha one" {
						text = "beta two"
					}
					m.Data = map[string]any{"text": text}
					return tx.UpdateMessage(e.ctx, m)
				}); err != nil {
					return err
				}
			}
			return nil
		}
		for k := 0; k < edits; k++ {
			for _, w := range []string{"alpha", "beta"} {
				var found []*chat.Message
				if err := e.s.View(e.ctx, func(tx chat.Tx) error {
					var err error
					found, err = tx.SearchMessages(e.ctx, chat.MessageSearch{Words: []string{w}, ChannelID: "c"})
					return err
				}); err != nil {
					return err
				}
				for _, m := range found {
					if text, _ := m.Data["text"].(string); !strings.Contains(text, w) {
						return fmt.Errorf("search %q returned %s with text %q", w, m.MessageID, text)
					}
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	all := append(e.search(words("alpha")), e.search(words("beta"))...)
	slices.Sort(all)
	want := make([]string, msgs)
	for i := range want {
		want[i] = fmt.Sprintf("m%d", i)
	}
	require.Equal(t, want, all, "every message is found by exactly one of its two texts")
}

// testSearchIndexer: a store that indexes after the commit
// (chat.SearchIndexer) finds a message once IndexSearch has read it, in
// batches of at most max, in commit order; an edit of an indexed message
// changes its words at once, an edit of one not yet indexed is read as it
// is when indexed, a deleted message is not found. A store that indexes in
// the transaction of the write finds a message, its edit and its deletion
// as soon as each commits (testSearchWriteThrough).
func testSearchIndexer(t *testing.T, e *env) {
	ix, ok := e.s.(chat.SearchIndexer)
	if !ok {
		testSearchWriteThrough(t, e)
		return
	}
	e.createChannels(newChannel("c", at(0)))
	index := func(max int) int {
		n, err := ix.IndexSearch(e.ctx, max)
		require.NoError(t, err)
		return n
	}
	find := func(w string) []string {
		return nilIfEmpty(messageIDs(read(e, func(tx chat.Tx) ([]*chat.Message, error) {
			return tx.SearchMessages(e.ctx, words(w))
		})))
	}
	require.Equal(t, 0, index(0), "an empty store")
	e.createMessages(textMessage("m1", "c", "u", 1, "kiwi one"))
	require.Nil(t, find("kiwi"), "not indexed yet")
	require.Equal(t, 1, index(1))
	require.Equal(t, []string{"m1"}, find("kiwi"))
	require.Equal(t, 0, index(1), "caught up")

	e.createMessages(textMessage("m2", "c", "u", 2, "kiwi two"), textMessage("m3", "c", "u", 3, "kiwi three"))
	require.Equal(t, 1, index(1), "a batch of one")
	require.Equal(t, []string{"m2", "m1"}, find("kiwi"))
	require.Equal(t, 1, index(5), "the rest")
	require.Equal(t, []string{"m3", "m2", "m1"}, find("kiwi"))

	// Edited before it was indexed: indexed as it is then.
	e.createMessages(textMessage("m4", "c", "u", 4, "kiwi four"))
	m4 := e.message("m4")
	m4.Data = map[string]any{"text": "lime four"}
	e.update(func(tx chat.Tx) error { return tx.UpdateMessage(e.ctx, m4) })
	require.Equal(t, 1, index(0))
	require.Equal(t, []string{"m3", "m2", "m1"}, find("kiwi"))
	require.Equal(t, []string{"m4"}, find("lime"))

	// Edited once indexed: the words change in the edit's transaction.
	m1 := e.message("m1")
	m1.Data = map[string]any{"text": "lemon one"}
	e.update(func(tx chat.Tx) error { return tx.UpdateMessage(e.ctx, m1) })
	require.Equal(t, []string{"m3", "m2"}, find("kiwi"))
	require.Equal(t, []string{"m1"}, find("lemon"))
	require.Equal(t, []string{"m1"}, nilIfEmpty(messageIDs(read(e, func(tx chat.Tx) ([]*chat.Message, error) {
		return tx.SearchMessages(e.ctx, words("one"))
	}))), "a kept word still finds it")

	// Deleted: not found, whichever statement deleted it.
	write(e, func(tx chat.Tx) ([]string, error) { return tx.SoftDeleteUserMessages(e.ctx, "u", at(3_500).Time) })
	require.Nil(t, find("kiwi"))
	require.Nil(t, find("lemon"))
	require.Equal(t, 0, index(0))
}

// testSearchWriteThrough: without an indexer, what a write commits is
// what the next search sees.
func testSearchWriteThrough(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	find := func(w string) []string {
		return nilIfEmpty(messageIDs(read(e, func(tx chat.Tx) ([]*chat.Message, error) {
			return tx.SearchMessages(e.ctx, words(w))
		})))
	}
	e.createMessages(textMessage("m1", "c", "u", 1, "kiwi one"), textMessage("m2", "c", "u", 2, "kiwi two"))
	require.Equal(t, []string{"m2", "m1"}, find("kiwi"), "found once committed")
	m1 := e.message("m1")
	m1.Data = map[string]any{"text": "lemon one"}
	e.update(func(tx chat.Tx) error { return tx.UpdateMessage(e.ctx, m1) })
	require.Equal(t, []string{"m2"}, find("kiwi"), "an edit drops the old words at once")
	require.Equal(t, []string{"m1"}, find("lemon"), "and adds the new ones")
	write(e, func(tx chat.Tx) ([]string, error) { return tx.SoftDeleteUserMessages(e.ctx, "u", at(3_000).Time) })
	require.Nil(t, find("kiwi"), "a deleted message is not found")
	require.Nil(t, find("lemon"))
}
