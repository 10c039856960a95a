package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"

	chat "github.com/chatengine/chat"
)

// The answers that carry messages (*chat.MessageList: queries, searches,
// creates, edits) are the largest and most frequent ones, and the same
// messages go out again and again: every member who opens a channel reads
// its newest page. Each message is encoded by encoding/json on its own, in
// a cheaper shape than chat.Message (messageJSON: the timestamps as
// strings, text data as a struct), and the encoding of a plain message is
// kept (encodedMessages) and written again as long as the message is the
// same. The list around the messages is the list's JSON: `{"messages":[`,
// the messages separated by commas, `],"users":` with the users as
// encoding/json writes them, then the paging when there is one. The bytes
// are those of encoding/json on the *chat.MessageList itself
// (TestMessageListJSON compares them).

// messageJSON is the wire shape of a chat.Message, field for field.
type messageJSON[D any] struct {
	MessageID      string           `json:"messageId"`
	ChannelID      string           `json:"channelId"`
	UserID         string           `json:"userId"`
	Type           chat.MessageType `json:"type"`
	Data           D                `json:"data"` // textData, or the message's map
	Tags           []string         `json:"tags"`
	ParentID       string           `json:"parentId,omitempty"`
	IsDeleted      bool             `json:"isDeleted"`
	CreatedAt      string           `json:"createdAt"`
	EditedAt       *string          `json:"editedAt"`
	UpdatedAt      string           `json:"updatedAt"`
	ChannelSegment int64            `json:"channelSegment"`
	ChildrenNumber int              `json:"childrenNumber"`
	FlagCount      int              `json:"flagCount"`
	Hashflag       chat.Hashflag    `json:"hashflag"`
	Reactions      map[string]int   `json:"reactions"`
	ReactionsCount int              `json:"reactionsCount"`
	// MentionedUserIDs is the message's list as is (never nil once
	// presented).
	MentionedUserIDs []string `json:"mentionedUserIds"`
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

// size is about the memory e holds.
func (e *cachedMessage) size() int {
	k := &e.key
	return len(e.enc) + len(k.id) + len(k.channel) + len(k.user) + len(k.parent) + len(k.text) + len(k.typ) +
		len(k.tags) + len(k.mentions) + 256
}

// encodedMessages keeps the encoding of the plain messages answered
// lately, one entry per message id, in two generations of at most limit
// bytes each: when the current one is full it becomes the old one and the
// oldest is dropped; a message found in the old generation moves to the
// current one. An entry serves a message only when its key is the
// message's key, so it is never stale: a changed message has another key,
// and its new encoding replaces the entry.
type encodedMessages struct {
	mu       sync.Mutex
	cur, old map[string]*cachedMessage
	used     int // bytes held by cur
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
		if e := c.cur[k.id]; e != nil {
			if e.key == *k {
				found[i] = e.enc
			}
		} else if e := c.old[k.id]; e != nil && e.key == *k {
			found[i] = e.enc
			c.putLocked(e)
		}
	}
}

// put keeps enc[i] as the encoding of keys[i] for every i in add.
func (c *encodedMessages) put(keys []messageKey, add []int, enc [][]byte) {
	if len(add) == 0 {
		return
	}
	// An entry of its own per message (entries sharing one array would
	// keep all of it alive for any one of them).
	entries := make([]*cachedMessage, len(add))
	for j, i := range add {
		entries[j] = &cachedMessage{key: keys[i], enc: enc[i]}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		c.putLocked(e)
	}
}

func (c *encodedMessages) putLocked(e *cachedMessage) {
	n := e.size()
	if n > c.limit/8 {
		return // an unusually large message: encoded each time
	}
	if c.cur == nil || c.used+n > c.limit {
		c.old, c.cur, c.used = c.cur, make(map[string]*cachedMessage), 0
	}
	if prev := c.cur[e.key.id]; prev != nil {
		c.used -= prev.size()
	}
	c.cur[e.key.id] = e
	c.used += n
}

// empty drops every entry.
func (c *encodedMessages) empty() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur, c.old, c.used = nil, nil, 0
}

// pageState is the space one message list is written with.
type pageState struct {
	keys  []messageKey
	plain []bool
	enc   [][]byte // the encoding of each message
	add   []int    // the messages to keep in messageCache
	spans [][2]int // where in the answer each of add is
	times []byte
	text  messageJSON[textData]
	other messageJSON[any]
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
	if err := appendJSON(buf, l.Users); err != nil {
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
		if err := p.encode(enc, &ms[i]); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		if p.plain[i] {
			p.add, p.spans = append(p.add, i), append(p.spans, [2]int{start, buf.Len()})
		}
	}
	buf.WriteByte(']')
	if len(p.add) > 0 {
		// The encodings to keep, each copied into an array of its own (an
		// entry holds no more memory than it is counted for).
		for j, i := range p.add {
			p.enc[i] = bytes.Clone(buf.Bytes()[p.spans[j][0]:p.spans[j][1]])
		}
		messageCache.put(p.keys, p.add, p.enc)
	}
	return nil
}

// encode writes m in its wire shape with enc.
func (p *pageState) encode(enc *json.Encoder, m *chat.Message) error {
	p.times = m.CreatedAt.AppendJSON(p.times[:0])
	created := string(p.times[1 : len(p.times)-1])
	updated := created
	if !m.UpdatedAt.Equal(m.CreatedAt.Time) {
		p.times = m.UpdatedAt.AppendJSON(p.times[:0])
		updated = string(p.times[1 : len(p.times)-1])
	}
	var edited *string
	if m.EditedAt != nil {
		p.times = m.EditedAt.AppendJSON(p.times[:0])
		e := string(p.times[1 : len(p.times)-1])
		edited = &e
	}
	if t, ok := dataText(m.Data); ok {
		p.text = messageJSON[textData]{
			MessageID: m.MessageID, ChannelID: m.ChannelID, UserID: m.UserID, Type: m.Type,
			Data: textData{Text: t}, Tags: m.Tags, ParentID: m.ParentID, IsDeleted: m.IsDeleted,
			CreatedAt: created, EditedAt: edited, UpdatedAt: updated,
			ChannelSegment: m.ChannelSegment, ChildrenNumber: m.ChildrenNumber, FlagCount: m.FlagCount,
			Hashflag: m.Hashflag, Reactions: m.Reactions, ReactionsCount: m.ReactionsCount,
			MentionedUserIDs: m.MentionedUserIDs,
		}
		return enc.Encode(&p.text)
	}
	p.other = messageJSON[any]{
		MessageID: m.MessageID, ChannelID: m.ChannelID, UserID: m.UserID, Type: m.Type,
		Data: m.Data, Tags: m.Tags, ParentID: m.ParentID, IsDeleted: m.IsDeleted,
		CreatedAt: created, EditedAt: edited, UpdatedAt: updated,
		ChannelSegment: m.ChannelSegment, ChildrenNumber: m.ChildrenNumber, FlagCount: m.FlagCount,
		Hashflag: m.Hashflag, Reactions: m.Reactions, ReactionsCount: m.ReactionsCount,
		MentionedUserIDs: m.MentionedUserIDs,
	}
	return enc.Encode(&p.other)
}

// release clears the references p holds and returns it to the pool.
func (p *pageState) release() {
	if cap(p.keys) > 1000 {
		return // an unusually large answer: not kept
	}
	clear(p.keys[:cap(p.keys)])
	clear(p.enc[:cap(p.enc)])
	p.text, p.other = messageJSON[textData]{}, messageJSON[any]{}
	pagePool.Put(p)
}
