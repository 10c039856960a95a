package httpapi

import (
	"sync"

	chat "github.com/chatengine/chat"
)

// The answers that carry messages (*chat.MessageList: queries, searches,
// creates, edits) are the largest and most frequent ones. encoding/json
// encodes a chat.Message through reflection, calls chat.Time's MarshalJSON
// for every timestamp and re-scans each result, and sorts the keys of
// every data map; those three were most of the time spent on a page of 50
// messages (BenchmarkEncodeMessagePage). messageListJSON is the same JSON
// in a cheaper shape for encoding/json: the timestamps formatted once into
// one string, and text data ({"text": "..."}, the common case) as a struct.
// The bytes are those of encoding/json on the *chat.MessageList itself
// (TestMessageListJSON compares them).

// messageListJSON is the wire shape of a *chat.MessageList whose
// messages' data have the type D: textData when every message of the list
// has text data (the common page: encoding/json then encodes the data as
// a struct field, without an interface value to look into per message),
// any otherwise.
type messageListJSON[D any] struct {
	Messages []messageJSON[D] `json:"messages"`
	Users    []chat.User      `json:"users"`
	Paging   *chat.Paging     `json:"paging,omitempty"`
}

// messageJSON is the wire shape of a chat.Message, field for field.
type messageJSON[D any] struct {
	MessageID      string           `json:"messageId"`
	ChannelID      string           `json:"channelId"`
	UserID         string           `json:"userId"`
	Type           chat.MessageType `json:"type"`
	Data           D                `json:"data"` // textData, or *textData or the message's map
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

// messageListPool holds the shapes of earlier answers, to reuse their
// slices.
var messageListPool = sync.Pool{New: func() any { return new(messageListShape) }}

// messageListShape is a messageListJSON with the space it is built in.
type messageListShape struct {
	text   messageListJSON[textData] // every message with text data
	mixed  messageListJSON[any]
	tmsgs  []messageJSON[textData]
	msgs   []messageJSON[any]
	texts  []textData
	strs   []string // the text of each message with text data
	isText []bool
	edits  []string
	times  []byte
	ends   []int
	sec    secText
}

// secText remembers the text of the last whole second formatted: the
// timestamps of a page are in order and often share their second (a burst
// of messages), and the time package's formatting of the date and clock is
// most of a timestamp's cost.
type secText struct {
	unix int64
	ok   bool
	text [len(`"2006-01-02T15:04:05`)]byte
}

// appendTime appends t as chat.Time.AppendJSON does.
func (c *secText) appendTime(b []byte, t chat.Time) []byte {
	sec, ms := t.Unix(), t.Nanosecond()/1e6
	if !c.ok || sec != c.unix {
		start := len(b)
		b = t.AppendJSON(b)
		// "2006-01-02T15:04:05.000Z": a year beyond 0-9999 is longer.
		if len(b)-start == len(c.text)+6 {
			c.ok, c.unix = true, sec
			copy(c.text[:], b[start:])
		} else {
			c.ok = false
		}
		return b
	}
	b = append(b, c.text[:]...)
	return append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z', '"')
}

// shape fills s with l's wire shape (a *messageListJSON). The result
// refers to l's maps and slices and holds no copy of their contents.
func (s *messageListShape) shape(l *chat.MessageList) any {
	n := len(l.Messages)
	// Every timestamp of the page goes into one buffer, made into one
	// string, which each field then slices. An updatedAt equal to its
	// createdAt (a message never changed) is not formatted again: its end
	// is recorded twice, and next gives it the createdAt's text.
	s.times, s.ends = s.times[:0], s.ends[:0]
	s.sec = secText{}
	// The text of each message with text data ("" for others): the data
	// are looked into once.
	s.strs, s.isText = slices0(s.strs, n), slices0(s.isText, n)
	allText := true
	for i := range l.Messages {
		m := &l.Messages[i]
		s.times = s.sec.appendTime(s.times, m.CreatedAt)
		s.ends = append(s.ends, len(s.times))
		if !m.UpdatedAt.Equal(m.CreatedAt.Time) {
			s.times = s.sec.appendTime(s.times, m.UpdatedAt)
		}
		s.ends = append(s.ends, len(s.times))
		if m.EditedAt != nil {
			s.times = s.sec.appendTime(s.times, *m.EditedAt)
			s.ends = append(s.ends, len(s.times))
		}
		t, ok := dataText(m.Data)
		s.strs, s.isText = append(s.strs, t), append(s.isText, ok)
		allText = allText && ok
	}
	s.edits = slices0(s.edits, n)
	if allText {
		s.tmsgs = fillMessages(s, l, slices0(s.tmsgs, n), func(i int) textData {
			return textData{Text: s.strs[i]}
		})
		s.text = messageListJSON[textData]{Messages: s.tmsgs, Users: l.Users, Paging: l.Paging}
		if l.Messages == nil {
			s.text.Messages = nil // null, as encoding/json writes a nil slice
		}
		return &s.text
	}
	s.texts = slices0(s.texts, n)
	s.msgs = fillMessages(s, l, slices0(s.msgs, n), func(i int) any {
		if s.isText[i] {
			s.texts = append(s.texts, textData{Text: s.strs[i]})
			return &s.texts[len(s.texts)-1]
		}
		return l.Messages[i].Data
	})
	s.mixed = messageListJSON[any]{Messages: s.msgs, Users: l.Users, Paging: l.Paging}
	return &s.mixed
}

// fillMessages appends the wire shape of l's messages to out, with the
// timestamps s.times holds (see shape) and the data of message i from
// data(i).
func fillMessages[D any](s *messageListShape, l *chat.MessageList, out []messageJSON[D], data func(i int) D) []messageJSON[D] {
	all := string(s.times)
	start, k := 0, 0
	var last string
	next := func() string {
		// AppendJSON wrote "...": the field takes what is inside the quotes.
		// An end equal to the previous one repeats the previous text.
		if end := s.ends[k]; end != start {
			last = all[start+1 : end-1]
			start = end
		}
		k++
		return last
	}
	for i := range l.Messages {
		m := &l.Messages[i]
		out = append(out, messageJSON[D]{
			MessageID: m.MessageID, ChannelID: m.ChannelID, UserID: m.UserID, Type: m.Type,
			Data: data(i), Tags: m.Tags, ParentID: m.ParentID, IsDeleted: m.IsDeleted,
			CreatedAt: next(), UpdatedAt: next(),
			ChannelSegment: m.ChannelSegment, ChildrenNumber: m.ChildrenNumber, FlagCount: m.FlagCount,
			Hashflag: m.Hashflag, Reactions: m.Reactions, ReactionsCount: m.ReactionsCount,
			MentionedUserIDs: m.MentionedUserIDs,
		})
		if m.EditedAt != nil {
			s.edits = append(s.edits, next())
			out[len(out)-1].EditedAt = &s.edits[len(s.edits)-1]
		}
	}
	return out
}

// slices0 returns s emptied with room for n elements, so that pointers to
// its elements stay valid while n are appended.
func slices0[T any](s []T, n int) []T {
	if s == nil || cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

// release clears the references s holds and returns it to the pool.
func (s *messageListShape) release() {
	if cap(s.msgs) > 1000 || cap(s.tmsgs) > 1000 {
		return // an unusually large answer: not kept
	}
	clear(s.tmsgs[:cap(s.tmsgs)])
	clear(s.msgs[:cap(s.msgs)])
	clear(s.texts[:cap(s.texts)])
	clear(s.strs[:cap(s.strs)])
	clear(s.edits[:cap(s.edits)])
	s.text, s.mixed = messageListJSON[textData]{}, messageListJSON[any]{}
	messageListPool.Put(s)
}
