package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestMessageListJSON checks that message lists written by writeResult
// are byte for byte what encoding/json makes of the *chat.MessageList:
// every field of chat.Message, data of every kind, edits, odd timestamps
// and characters that encoding/json escapes, encoded anew and from
// messageCache, and each field of a cached message changed. A field added
// to chat.Message and not to messageJSON fails it.
func TestMessageListJSON(t *testing.T) {
	at := func(y int, ms int) chat.Time {
		return chat.NewTime(time.Date(y, 3, 4, 5, 6, 7, ms*1e6, time.UTC))
	}
	edited := at(2026, 9)
	far := chat.Forever
	full := chat.Message{
		MessageID: "m1", ChannelID: "c<1>", UserID: "u&1", Type: chat.MessageTypeText,
		Data: map[string]any{"text": "hi <b>&</b> \u2028 é \x01"}, Tags: []string{"a", "b"}, ParentID: "p1",
		IsDeleted: true, CreatedAt: at(2026, 0), EditedAt: &edited, UpdatedAt: at(2026, 999),
		ChannelSegment: 7, ChildrenNumber: 2, FlagCount: 1,
		Hashflag:  chat.Hashflag{Bits: 64, Hashes: 3, Hash: []uint32{1, 2}},
		Reactions: map[string]int{"like": 2, "haha": 1}, ReactionsCount: 3,
		MentionedUserIDs: []string{"u<2>", "v"},
	}
	msg := func(data map[string]any) chat.Message {
		m := full
		m.Data, m.EditedAt, m.ParentID = data, nil, ""
		return m
	}
	odd := msg(map[string]any{"text": "year 10000"})
	odd.CreatedAt, odd.UpdatedAt, odd.EditedAt = at(10000, 1), at(1, 2), &far
	// Never changed (updatedAt is createdAt), then edited at that instant.
	same := msg(map[string]any{"text": "same"})
	same.UpdatedAt = same.CreatedAt
	sameEdited := same
	sameEdited.EditedAt = &same.CreatedAt
	// The next second, at the same millisecond as the messages before it
	// (the shape reuses the text of a second already formatted).
	nextSecond := msg(map[string]any{"text": "next second"})
	nextSecond.CreatedAt = chat.NewTime(time.Date(2026, 3, 4, 5, 6, 8, 0, time.UTC))
	nextSecond.UpdatedAt = at(2026, 0)
	lists := []*chat.MessageList{
		{Messages: []chat.Message{}, Users: []chat.User{}},
		{},
		{Messages: []chat.Message{full}, Users: []chat.User{{UserID: "u&1", DisplayName: "U", Roles: []string{}, Metadata: map[string]any{}}},
			Paging: &chat.Paging{Next: "n", Previous: "p"}},
		{Messages: []chat.Message{
			msg(map[string]any{"text": "plain"}),
			msg(map[string]any{"text": "two keys", "extra": 1.5}),
			msg(map[string]any{"text": 5}),
			msg(map[string]any{"card": map[string]any{"z": true, "a": []any{"x", nil}}}),
			msg(map[string]any{}),
			msg(nil),
			func() chat.Message { m := msg(nil); m.MentionedUserIDs = []string{}; return m }(),
			odd,
			same,
			full,
			same,
			sameEdited,
			same,
			nextSecond,
			same,
			msg(map[string]any{"urls": map[string]any{"small": "/api/v2/messages/m/images?size=small&exp=1&sig=x"}, "text": "caption"}),
		}, Users: []chat.User{}},
	}
	lists = append(lists, benchMessagePage(t, 50), lists[1]) // a big answer, then a small one from the same pooled state
	messageCache.empty()
	// Each list twice: the second time the plain messages come from
	// messageCache.
	for round := 0; round < 2; round++ {
		for i, l := range lists {
			requireEncoding(t, l, "round %d, list %d", round, i)
		}
	}
	// Every field of a plain message changed, one at a time, after the
	// message was cached: the answer is the changed message's.
	base := benchMessagePage(t, 4)
	base.Messages = base.Messages[1:2]
	requireEncoding(t, base, "plain message")
	_, ok := plainKey(&base.Messages[0])
	require.True(t, ok)
	for _, v := range messageVariants(t, base.Messages[0]) {
		l := &chat.MessageList{Messages: []chat.Message{v.m}, Users: base.Users}
		requireEncoding(t, l, "%s changed", v.field)
		requireEncoding(t, base, "%s changed back", v.field)
	}
}

// requireEncoding checks that writeResult writes l as encoding/json does.
func requireEncoding(t *testing.T, l *chat.MessageList, msg string, args ...any) {
	t.Helper()
	want, err := json.Marshal(l)
	require.NoError(t, err)
	w := &bodyWriter{h: http.Header{}}
	writeResult(w, l)
	require.Equal(t, string(want)+"\n", w.b.String(), append([]any{msg}, args...)...)
}

// messageVariant is a message with one field changed.
type messageVariant struct {
	field string
	m     chat.Message
}

// messageVariants returns, for every field of chat.Message, m with that
// field changed (found by reflection, so a field added to chat.Message
// is changed too, or fails here when its type is new).
func messageVariants(t *testing.T, m chat.Message) []messageVariant {
	t.Helper()
	var out []messageVariant
	typ := reflect.TypeOf(m)
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		v := m
		// Fresh copies of the reference fields, so that no variant
		// changes m.
		v.Data = maps.Clone(m.Data)
		v.Tags, v.MentionedUserIDs = slices.Clone(m.Tags), slices.Clone(m.MentionedUserIDs)
		v.Reactions, v.Hashflag.Hash = maps.Clone(m.Reactions), slices.Clone(m.Hashflag.Hash)
		fv := reflect.ValueOf(&v).Elem().Field(i)
		switch x := fv.Addr().Interface().(type) {
		case *string:
			*x += "<x>"
		case *chat.MessageType:
			*x = chat.MessageTypeFile
		case *map[string]any:
			(*x)["text"] = "other & text"
		case *[]string:
			*x = append(*x, "x")
		case *bool:
			*x = !*x
		case *chat.Time:
			*x = chat.NewTime(x.Add(time.Millisecond))
		case **chat.Time:
			e := chat.NewTime(m.CreatedAt.Add(time.Second))
			*x = &e
		case *int64:
			*x++
		case *int:
			*x++
		case *chat.Hashflag:
			for _, h := range []chat.Hashflag{{Bits: x.Bits + 1, Hashes: x.Hashes, Hash: x.Hash}, {Bits: x.Bits, Hashes: x.Hashes + 1, Hash: x.Hash}, {Bits: 8, Hashes: 1, Hash: []uint32{3}}} {
				w := v
				w.Hashflag = h
				out = append(out, messageVariant{f.Name, w})
			}
			continue
		case *map[string]int:
			*x = map[string]int{"like": 1}
		default:
			t.Fatalf("chat.Message.%s: no variant for the type %s", f.Name, f.Type)
		}
		out = append(out, messageVariant{f.Name, v})
	}
	// The same millisecond encodes the same; a tag list that joins to the
	// same text does not.
	v := m
	v.CreatedAt = chat.NewTime(m.CreatedAt.Truncate(time.Millisecond).Add(999 * time.Microsecond))
	out = append(out, messageVariant{"CreatedAt (same millisecond)", v})
	v = m
	v.Tags = []string{"a,b"}
	out = append(out, messageVariant{"Tags (one with a comma)", v})
	v.Tags = []string{"a", "b"}
	out = append(out, messageVariant{"Tags (two)", v})
	return out
}

// TestMessageKeyFields checks that every field of chat.Message changes a
// plain message's key or makes it not plain, and that messageJSON has a
// field for each (the cache would otherwise serve a message by the
// encoding of another).
func TestMessageKeyFields(t *testing.T) {
	require.Equal(t, reflect.TypeOf(chat.Message{}).NumField(), reflect.TypeOf(otherJSON{}).NumField())
	m := benchMessagePage(t, 4).Messages[1]
	k, ok := plainKey(&m)
	require.True(t, ok)
	for _, v := range messageVariants(t, m) {
		vk, ok := plainKey(&v.m)
		if v.field == "CreatedAt (same millisecond)" {
			require.True(t, ok)
			require.Equal(t, k, vk)
			continue
		}
		require.False(t, ok && vk == k, "%s changed: same key", v.field)
	}
}

// TestMessageCacheGenerations checks the cache's bound: entries beyond the
// limit push the older ones out, a message found in the old generation
// moves to the current one, a changed message replaces its entry.
func TestMessageCacheGenerations(t *testing.T) {
	c := &encodedMessages{limit: 6 << 10}
	msgs := benchMessagePage(t, 40).Messages
	keys := make([]messageKey, len(msgs))
	enc := make([][]byte, len(msgs))
	for i := range msgs {
		k, ok := plainKey(&msgs[i])
		if !ok {
			msgs[i].Tags = []string{}
			k, ok = plainKey(&msgs[i])
		}
		require.True(t, ok)
		keys[i], enc[i] = k, []byte(fmt.Sprintf(`{"n":%d}`, i))
	}
	one := entrySize(&keys[0], enc[0])
	perGen := c.limit / one
	require.Less(t, perGen, len(msgs)/2, "the page must fill two generations")
	found := func(i int) []byte {
		f := make([][]byte, 1)
		c.get(keys[i:i+1], []bool{true}, f)
		return f[0]
	}
	c.put(keys, []int{0}, enc)
	require.Equal(t, enc[0], found(0))
	for i := 1; i < len(msgs); i++ {
		c.put(keys, []int{i}, enc)
		require.LessOrEqual(t, c.cur.used, c.limit)
	}
	require.Nil(t, found(0), "pushed out by two generations")
	last := len(msgs) - 1
	require.Equal(t, enc[last], found(last))
	// The oldest entry of the old generation moves to the current one.
	var old int
	for i := range msgs {
		if c.old.find(keys[i].id) != nil && c.cur.find(keys[i].id) == nil {
			old = i
			break
		}
	}
	require.NotZero(t, old)
	require.Equal(t, enc[old], found(old))
	require.NotNil(t, c.cur.find(keys[old].id))
	// A changed message: its old encoding is not served, the new one
	// replaces it; the copy it replaces stays counted (it stays in the
	// generation's arrays until the generation is dropped).
	changed := keys[last]
	changed.children++
	f := make([][]byte, 1)
	c.get([]messageKey{changed}, []bool{true}, f)
	require.Nil(t, f[0])
	c.empty()
	c.put(keys, []int{last}, enc)
	used := c.cur.used
	newEnc := []byte(`{"changed":1}`)
	c.put([]messageKey{changed}, []int{0}, [][]byte{newEnc})
	require.Equal(t, used+entrySize(&changed, newEnc), c.cur.used)
	require.Equal(t, 1, c.cur.count, "one entry per message")
	require.Nil(t, found(last))
	c.get([]messageKey{changed}, []bool{true}, f)
	require.Equal(t, `{"changed":1}`, string(f[0]))
	// The cache keeps a copy: the bytes it was given may be reused.
	newEnc[2] = 'X'
	c.get([]messageKey{changed}, []bool{true}, f)
	require.Equal(t, `{"changed":1}`, string(f[0]))
}

// TestMessageCacheConcurrent writes pages that share messages from many
// goroutines while some of the messages change (run with -race): every
// answer is encoding/json's.
func TestMessageCacheConcurrent(t *testing.T) {
	messageCache.empty()
	page := benchMessagePage(t, 30)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 40; r++ {
				l := &chat.MessageList{Messages: slices.Clone(page.Messages[g : g+20]), Users: page.Users}
				if r%3 == 0 {
					l.Messages[r%20].ChildrenNumber = r // changed in this answer only
				}
				want, err := json.Marshal(l)
				if err != nil {
					t.Error(err)
					return
				}
				w := &bodyWriter{h: http.Header{}}
				writeResult(w, l)
				if w.b.String() != string(want)+"\n" {
					t.Errorf("goroutine %d, round %d: not encoding/json's bytes", g, r)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// bodyWriter is a ResponseWriter that keeps the body.
type bodyWriter struct {
	h http.Header
	b bytes.Buffer
}

func (w *bodyWriter) Header() http.Header         { return w.h }
func (w *bodyWriter) Write(b []byte) (int, error) { return w.b.Write(b) }
func (w *bodyWriter) WriteHeader(int)             {}

// TestUserListJSON checks the users of a message list against
// encoding/json: userJSON has a field for each field of chat.User that
// shows, and every such field changed, one at a time (found by
// reflection, so that a field added to chat.User is changed too, or fails
// here when its type is new), is written as encoding/json writes it.
func TestUserListJSON(t *testing.T) {
	typ := reflect.TypeOf(chat.User{})
	shown := 0
	for i := 0; i < typ.NumField(); i++ {
		if typ.Field(i).Tag.Get("json") != "-" {
			shown++
		}
	}
	require.Equal(t, shown, reflect.TypeOf(userJSON{}).NumField(), "userJSON must have a field for each shown field of chat.User")

	now := chat.NewTime(time.Date(2026, 3, 4, 5, 6, 7, 8e6, time.UTC))
	base := chat.User{UserID: "u<1>", DisplayName: "Ü & co", Roles: []string{"admin"}, Metadata: map[string]any{"b": 1.5, "a": "<x>"},
		FlagCount: 2, Hashflag: chat.Hashflag{Bits: 1, Hashes: 1, Hash: []uint32{}}, CreatedAt: now, UpdatedAt: now}
	other := chat.User{UserID: "v", DisplayName: "v", Roles: []string{}, Metadata: map[string]any{}, CreatedAt: now, UpdatedAt: now}
	msgs := benchMessagePage(t, 4).Messages[:2]
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if f.Tag.Get("json") == "-" {
			continue
		}
		v := base
		v.Roles, v.Metadata = slices.Clone(base.Roles), maps.Clone(base.Metadata)
		switch x := reflect.ValueOf(&v).Elem().Field(i).Addr().Interface().(type) {
		case *string:
			*x += "\u2028"
		case *[]string:
			*x = append(*x, "x")
		case *map[string]any:
			(*x)["c"] = []any{nil, true}
		case *int:
			*x++
		case *bool:
			*x = !*x
		case *chat.Hashflag:
			x.Hash = []uint32{7}
		case *chat.Time:
			*x = chat.NewTime(x.Add(time.Second + time.Millisecond))
		case **chat.Time:
			a := chat.NewTime(now.Add(time.Hour))
			*x = &a
		default:
			t.Fatalf("chat.User.%s: no variant for the type %s", f.Name, f.Type)
		}
		requireEncoding(t, &chat.MessageList{Messages: msgs, Users: []chat.User{v, other}}, "%s changed", f.Name)
	}
	requireEncoding(t, &chat.MessageList{Messages: msgs, Users: []chat.User{base, other, base}}, "unchanged")
}
