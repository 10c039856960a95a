package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"

	chat "github.com/chatengine/chat"
)

// The answers that carry messages (*chat.MessageList: queries, searches,
// creates, edits) are the largest and most frequent ones, and the same
// messages go out again and again: every member who opens a channel reads
// its newest page. Each message is encoded by encoding/json on its own, in
// a cheaper shape than chat.Message (messageJSON: the timestamps as
// strings, all of a page's cut from one string; text data as a struct; a
// plain message's empty reactions and hashflag hashes as types that
// encode empty), and the encoding of a plain message is kept
// (encodedMessages, copied into arrays that each generation of the cache
// shares) and written again as long as the message is the same. The list
// around the messages is the list's JSON: `{"messages":[`, the messages
// separated by commas, `],"users":` with the users (encoded at once in
// userJSON, their shape with the timestamps as strings), then the paging
// when there is one. The bytes are those of encoding/json on the
// *chat.MessageList itself (TestMessageListJSON and TestUserListJSON
// compare them).

// messageJSON is the wire shape of a chat.Message, field for field. D
// is the type of its data (textData, or the message's map), H of its
// hashflag and R of its reactions: for a plain message (see messageKey),
// whose hashflag has no hashes and which has no reactions, plainHashflag
// and struct{}, which encoding/json writes as the empty list and object
// without walking a slice or a map.
type messageJSON[D, H, R any] struct {
	MessageID      string           `json:"messageId"`
	ChannelID      string           `json:"channelId"`
	UserID         string           `json:"userId"`
	Type           chat.MessageType `json:"type"`
	Data           D                `json:"data"`
	Tags           []string         `json:"tags"`
	ParentID       string           `json:"parentId,omitempty"`
	IsDeleted      bool             `json:"isDeleted"`
	CreatedAt      string           `json:"createdAt"`
	EditedAt       *string          `json:"editedAt"`
	UpdatedAt      string           `json:"updatedAt"`
	ChannelSegment int64            `json:"channelSegment"`
	ChildrenNumber int              `json:"childrenNumber"`
	FlagCount      int              `json:"flagCount"`
	Hashflag       H                `json:"hashflag"`
	Reactions      R                `json:"reactions"`
	ReactionsCount int              `json:"reactionsCount"`
	// MentionedUserIDs is the message's list as is (never nil once
	// presented).
	MentionedUserIDs []string `json:"mentionedUserIds"`
}

// The shapes messages are written in.
type (
	plainJSON = messageJSON[textData, plainHashflag, struct{}]
	textJSON  = messageJSON[textData, chat.Hashflag, map[string]int]
	otherJSON = messageJSON[any, chat.Hashflag, map[string]int]
)

// plainHashflag is the chat.Hashflag of a plain message: its Hash is
// empty.
type plainHashflag struct {
	Bits   int       `json:"bits"`
	Hashes int       `json:"hashes"`
	Hash   [0]uint32 `json:"hash"`
}

// shape sets *out to m in the shape of out.
func shape[D, H, R any](out *messageJSON[D, H, R], m *chat.Message, data D, h H, r R, created, updated string, edited *string) {
	*out = messageJSON[D, H, R]{
		MessageID: m.MessageID, ChannelID: m.ChannelID, UserID: m.UserID, Type: m.Type,
		Data: data, Tags: m.Tags, ParentID: m.ParentID, IsDeleted: m.IsDeleted,
		CreatedAt: created, EditedAt: edited, UpdatedAt: updated,
		ChannelSegment: m.ChannelSegment, ChildrenNumber: m.ChildrenNumber, FlagCount: m.FlagCount,
		Hashflag: h, Reactions: r, ReactionsCount: m.ReactionsCount,
		MentionedUserIDs: m.MentionedUserIDs,
	}
}

// textData is the data of a message whose data has the single key "text"
// holding a string.
type textData struct {
	Text string `json:"text"`
}

// dataText returns the text of data that is exactly {"text": <string>}.
func dataText(data map[string]any) (string, bool) {
	t, ok := data["text"].(string)
	return t, ok && len(data) == 1
}

// messageKey is everything the encoding of a plain message depends on: a
// message with text data, tags and mentions (possibly empty, not nil),
// and no reactions or hashflag hashes (most messages). Two plain messages
// with equal keys encode to the same bytes; the timestamps count to the
// millisecond, as they are written. TestMessageKeyFields keeps it in step
// with messageJSON.
type messageKey struct {
	id, channel, user, parent, text string
	typ                             chat.MessageType
	tags, mentions                  string // see listKey
	deleted                         bool
	created, updated                int64 // Unix milliseconds
	edited                          int64 // Unix milliseconds; noEdit when not edited
	segment                         int64
	children, flags, reactions      int
	bits, hashes                    int
}

// noEdit is messageKey.edited of a message never edited.
const noEdit = -1 << 63

// plainKey returns the key of m, or false when m is not plain.
func plainKey(m *chat.Message) (messageKey, bool) {
	text, ok := dataText(m.Data)
	if !ok || m.Tags == nil || m.MentionedUserIDs == nil || m.Reactions == nil || len(m.Reactions) > 0 ||
		m.Hashflag.Hash == nil || len(m.Hashflag.Hash) > 0 {
		return messageKey{}, false
	}
	k := messageKey{id: m.MessageID, channel: m.ChannelID, user: m.UserID, parent: m.ParentID, text: text,
		typ: m.Type, tags: listKey(m.Tags), mentions: listKey(m.MentionedUserIDs),
		deleted: m.IsDeleted, created: m.CreatedAt.UnixMilli(), updated: m.UpdatedAt.UnixMilli(),
		edited: noEdit, segment: m.ChannelSegment, children: m.ChildrenNumber, flags: m.FlagCount,
		reactions: m.ReactionsCount, bits: m.Hashflag.Bits, hashes: m.Hashflag.Hashes}
	if m.EditedAt != nil {
		k.edited = m.EditedAt.UnixMilli()
	}
	return k, true
}

// listKey is a string that differs for every list of strings: each
// element's length in decimal, a colon, then the element ("" for none).
func listKey(l []string) string {
	if len(l) == 0 {
		return ""
	}
	var b []byte
	for _, s := range l {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	return string(b)
}

// cachedMessage is an entry of encodedMessages.
type cachedMessage struct {
	key messageKey
	enc []byte
}

// entryOverhead is what an entry costs besides its strings and encoding:
// its slot in a generation's entries and in the index map.
var entryOverhead = int(reflect.TypeFor[cachedMessage]().Size()) + 64

// entrySize is about the memory an entry of key k and encoding enc holds.
func entrySize(k *messageKey, enc []byte) int {
	return len(enc) + len(k.id) + len(k.channel) + len(k.user) + len(k.parent) + len(k.text) + len(k.typ) +
		len(k.tags) + len(k.mentions) + entryOverhead
}

// arenaChunk is the size of the arrays a generation copies encodings into.
const arenaChunk = 64 << 10

// generation is one generation of encodedMessages: its entries, found by
// message id, and the arrays their encodings are copied into. The whole of
// it is dropped at once, so the encodings share arrays and an entry costs
// no allocation of its own.
type generation struct {
	index map[string]int32  // message id -> entry number
	ents  [][]cachedMessage // the entries, entsChunk to an array (never moved once written)
	arena []byte            // the array being filled
	used  int               // bytes put, replaced entries included (their copies stay in the arrays)
	count int               // entries
}

// entsChunk is how many entries an array of generation.ents holds.
const entsChunk = 256

// encodedMessages keeps the encoding of the plain messages answered
// lately, one entry per message id, in two generations of at most limit
// bytes each: when the current one is full it becomes the old one and the
// oldest is dropped; a message found in the old generation is copied into
// the current one. An entry serves a message only when its key is the
// message's key, so it is never stale: a changed message has another key,
// and its new encoding replaces the entry.
type encodedMessages struct {
	mu       sync.Mutex
	cur, old *generation
	limit    int
}

// messageCache is shared by every handler of the process; its entries
// depend on nothing but the messages.
var messageCache = &encodedMessages{limit: 4 << 20}

// get sets found[i] to the encoding of keys[i] where plain[i] is true and
// the cache has it.
func (c *encodedMessages) get(keys []messageKey, plain []bool, found [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range keys {
		if !plain[i] {
			continue
		}
		k := &keys[i]
		if e := c.cur.find(k.id); e != nil {
			if e.key == *k {
				found[i] = e.enc
			}
		} else if e := c.old.find(k.id); e != nil && e.key == *k {
			found[i] = e.enc
			c.putLocked(k, e.enc)
		}
	}
}

// find returns the entry of message id, or nil.
func (g *generation) find(id string) *cachedMessage {
	if g == nil {
		return nil
	}
	if i, ok := g.index[id]; ok {
		return g.entry(i)
	}
	return nil
}

// entry returns entry number i.
func (g *generation) entry(i int32) *cachedMessage {
	return &g.ents[i/entsChunk][i%entsChunk]
}

// put keeps enc[i] (copied) as the encoding of keys[i] for every i in add.
func (c *encodedMessages) put(keys []messageKey, add []int, enc [][]byte) {
	if len(add) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, i := range add {
		c.putLocked(&keys[i], enc[i])
	}
}

// putLocked copies enc into the current generation as the encoding of k.
func (c *encodedMessages) putLocked(k *messageKey, enc []byte) {
	n := entrySize(k, enc)
	if n > c.limit/8 {
		return // an unusually large message: encoded each time
	}
	g := c.cur
	if g == nil || g.used+n > c.limit {
		g = &generation{index: make(map[string]int32)}
		c.old, c.cur = c.cur, g
	}
	if len(g.arena)+len(enc) > cap(g.arena) {
		g.arena = make([]byte, 0, max(arenaChunk, len(enc)))
	}
	at := len(g.arena)
	g.arena = append(g.arena, enc...)
	i, ok := g.index[k.id]
	if !ok {
		i = int32(g.count)
		if g.count%entsChunk == 0 {
			g.ents = append(g.ents, make([]cachedMessage, entsChunk))
		}
		g.index[k.id] = i
		g.count++
	}
	e := g.entry(i)
	e.key, e.enc = *k, g.arena[at:len(g.arena):len(g.arena)]
	g.used += n
}

// empty drops every entry.
func (c *encodedMessages) empty() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur, c.old = nil, nil
}

// pageState is the space one message list is written with.
type pageState struct {
	keys   []messageKey
	plain  []bool
	enc    [][]byte // the encoding of each message
	add    []int    // the messages to keep in messageCache
	spans  [][2]int // where in the answer each of add is
	times  []byte   // the timestamps of the messages to encode, as JSON strings
	stamps [][3]stamp
	edited []string // editedAt of each message to encode, for its pointer
	plainM plainJSON
	textM  textJSON
	otherM otherJSON
}

// stamp is where in a buffer of timestamps (pageState.times,
// usersState.times) one is, without its quotes; a zero stamp is none.
type stamp struct{ from, to int }

// appendStamp appends t to times as a JSON string and returns where it is.
func appendStamp(times []byte, t *chat.Time) ([]byte, stamp) {
	from := len(times)
	times = t.AppendJSON(times)
	return times, stamp{from + 1, len(times) - 1} // inside the quotes
}

var pagePool = sync.Pool{New: func() any { return new(pageState) }}

// appendMessageList writes l as encoding/json writes the *chat.MessageList
// (without the newline Encode adds).
func appendMessageList(buf *bytes.Buffer, l *chat.MessageList) error {
	buf.WriteString(`{"messages":`)
	if l.Messages == nil {
		buf.WriteString("null")
	} else if err := appendMessages(buf, l.Messages); err != nil {
		return err
	}
	buf.WriteString(`,"users":`)
	if err := appendUsers(buf, l.Users); err != nil {
		return err
	}
	if l.Paging != nil {
		buf.WriteString(`,"paging":`)
		if err := appendJSON(buf, l.Paging); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// userJSON is the wire shape of a chat.User, field for field, with the
// timestamps as strings (a chat.Time field costs encoding/json a call of
// its MarshalJSON and a check and copy of what it returns).
type userJSON struct {
	UserID       string         `json:"userId"`
	DisplayName  string         `json:"displayName"`
	Roles        []string       `json:"roles"`
	Metadata     map[string]any `json:"metadata"`
	FlagCount    int            `json:"flagCount"`
	Hashflag     chat.Hashflag  `json:"hashflag"`
	IsGlobalBan  bool           `json:"isGlobalBan"`
	CreatedAt    string         `json:"createdAt"`
	UpdatedAt    string         `json:"updatedAt"`
	Online       bool           `json:"online"`
	LastActiveAt *string        `json:"lastActiveAt"`
}

// usersState is the space a page's users are written with.
type usersState struct {
	times  []byte
	stamps [][3]stamp
	out    []userJSON
	active []string
}

var usersPool = sync.Pool{New: func() any { return new(usersState) }}

// appendUsers writes us as encoding/json writes the []chat.User (without
// a newline): in the userJSON shape, the timestamps cut from one string.
func appendUsers(buf *bytes.Buffer, us []chat.User) error {
	if us == nil {
		buf.WriteString("null")
		return nil
	}
	if len(us) == 0 {
		buf.WriteString("[]")
		return nil
	}
	p := usersPool.Get().(*usersState)
	p.times, p.stamps, p.out, p.active = p.times[:0], p.stamps[:0], p.out[:0], p.active[:0]
	at := func(t *chat.Time) (st stamp) {
		p.times, st = appendStamp(p.times, t)
		return st
	}
	for i := range us {
		u := &us[i]
		st := [3]stamp{at(&u.CreatedAt), at(&u.UpdatedAt)}
		if u.LastActiveAt != nil {
			st[2] = at(u.LastActiveAt)
		}
		p.stamps = append(p.stamps, st)
	}
	times := string(p.times)
	if cap(p.active) < len(us) {
		p.active = make([]string, 0, len(us))
	}
	for i := range us {
		u, st := &us[i], &p.stamps[i]
		var active *string
		if st[2] != (stamp{}) {
			p.active = append(p.active, times[st[2].from:st[2].to])
			active = &p.active[len(p.active)-1]
		}
		p.out = append(p.out, userJSON{UserID: u.UserID, DisplayName: u.DisplayName, Roles: u.Roles, Metadata: u.Metadata,
			FlagCount: u.FlagCount, Hashflag: u.Hashflag, IsGlobalBan: u.IsGlobalBan,
			CreatedAt: times[st[0].from:st[0].to], UpdatedAt: times[st[1].from:st[1].to],
			Online: u.Online, LastActiveAt: active})
	}
	err := appendJSON(buf, p.out)
	if cap(p.out) <= 1000 {
		clear(p.out[:cap(p.out)])
		clear(p.active[:cap(p.active)])
		usersPool.Put(p)
	}
	return err
}

// appendJSON appends v as encoding/json encodes it.
func appendJSON(buf *bytes.Buffer, v any) error {
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// appendMessages writes ms as a JSON array, each message from
// messageCache or encoded now (and then kept there when it is plain).
func appendMessages(buf *bytes.Buffer, ms []chat.Message) error {
	p := pagePool.Get().(*pageState)
	defer p.release()
	p.keys, p.plain, p.enc, p.add, p.spans = p.keys[:0], p.plain[:0], p.enc[:0], p.add[:0], p.spans[:0]
	for i := range ms {
		k, ok := plainKey(&ms[i])
		p.keys, p.plain, p.enc = append(p.keys, k), append(p.plain, ok), append(p.enc, nil)
	}
	messageCache.get(p.keys, p.plain, p.enc)
	times := p.stampTimes(ms)
	var enc *json.Encoder
	buf.WriteByte('[')
	for i := range ms {
		if i > 0 {
			buf.WriteByte(',')
		}
		if p.enc[i] != nil {
			buf.Write(p.enc[i])
			continue
		}
		if enc == nil {
			enc = json.NewEncoder(buf)
		}
		start := buf.Len()
		if err := p.encode(enc, ms, i, times); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		if p.plain[i] {
			p.add, p.spans = append(p.add, i), append(p.spans, [2]int{start, buf.Len()})
		}
	}
	buf.WriteByte(']')
	if len(p.add) > 0 {
		// The encodings to keep: the cache copies them.
		for j, i := range p.add {
			p.enc[i] = buf.Bytes()[p.spans[j][0]:p.spans[j][1]]
		}
		messageCache.put(p.keys, p.add, p.enc)
	}
	return nil
}

// stampTimes writes the timestamps of the messages to encode (those
// without an encoding in p.enc) into one string, which it returns, and
// sets p.stamps to where each one is: one string for the page rather
// than one per timestamp.
func (p *pageState) stampTimes(ms []chat.Message) string {
	p.times, p.stamps = p.times[:0], p.stamps[:0]
	at := func(t *chat.Time) (st stamp) {
		p.times, st = appendStamp(p.times, t)
		return st
	}
	for i := range ms {
		var st [3]stamp
		if m := &ms[i]; p.enc[i] == nil {
			st[0] = at(&m.CreatedAt)
			st[1] = st[0]
			if !m.UpdatedAt.Equal(m.CreatedAt.Time) {
				st[1] = at(&m.UpdatedAt)
			}
			if m.EditedAt != nil {
				st[2] = at(m.EditedAt)
			}
		}
		p.stamps = append(p.stamps, st)
	}
	return string(p.times)
}

// encode writes ms[i] in its wire shape with enc; times is what
// stampTimes returned.
func (p *pageState) encode(enc *json.Encoder, ms []chat.Message, i int, times string) error {
	m, st := &ms[i], &p.stamps[i]
	created, updated := times[st[0].from:st[0].to], times[st[1].from:st[1].to]
	var edited *string
	if st[2] != (stamp{}) {
		if p.edited == nil {
			p.edited = make([]string, 0, len(ms))
		}
		p.edited = append(p.edited, times[st[2].from:st[2].to])
		edited = &p.edited[len(p.edited)-1]
	}
	if p.plain[i] {
		shape(&p.plainM, m, textData{Text: p.keys[i].text}, plainHashflag{Bits: m.Hashflag.Bits, Hashes: m.Hashflag.Hashes},
			struct{}{}, created, updated, edited)
		return enc.Encode(&p.plainM)
	}
	if t, ok := dataText(m.Data); ok {
		shape(&p.textM, m, textData{Text: t}, m.Hashflag, m.Reactions, created, updated, edited)
		return enc.Encode(&p.textM)
	}
	shape(&p.otherM, m, any(m.Data), m.Hashflag, m.Reactions, created, updated, edited)
	return enc.Encode(&p.otherM)
}

// release clears the references p holds and returns it to the pool.
func (p *pageState) release() {
	if cap(p.keys) > 1000 {
		return // an unusually large answer: not kept
	}
	clear(p.keys[:cap(p.keys)])
	clear(p.enc[:cap(p.enc)])
	clear(p.edited[:cap(p.edited)])
	p.edited = p.edited[:0]
	p.plainM, p.textM, p.otherM = plainJSON{}, textJSON{}, otherJSON{}
	pagePool.Put(p)
}
