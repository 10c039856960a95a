package memory

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"time"
	"unsafe"

	chat "github.com/chatengine/chat"
)

// msg is the stored form of a message. A store holds every message ever
// posted, and the garbage collector marks all of them in every cycle, so a
// stored message keeps few pointers and few separate objects: the custom
// data is one pointer-free byte slice (see encodeData), times are Unix
// milliseconds, the channel, author and type are numbers of interned
// strings (see intern), and the fields most messages leave
// empty (tags, flags, reactions, the edit time) live in a msgExtra that
// exists only when one of them is set. Nil and empty slices and maps are
// told apart, so a message reads back exactly as it was written.
type msg struct {
	id, parentID  string
	ch, user, typ strID // channel, author and type

	data []byte    // the encoded Data; nil when Data is nil
	x    *msgExtra // nil when all its fields are zero

	created, updated int64 // Unix milliseconds
	seg              int64
	children         int
	deleted          bool
	emptyTags        bool // Tags is empty but not nil (x.tags is nil then)
}

// msgExtra holds the fields of a stored message that are usually empty.
type msgExtra struct {
	tags      []string // a private copy; nil when empty
	hash      []uint32 // Hashflag.Hash, a private copy
	reactions map[string]int
	mentions  []string // MentionedUserIDs, a private copy; nil when empty

	edited                    int64 // Unix milliseconds, when hasEdited
	hasEdited                 bool
	flagCount, reactionsCount int
	bits, hashes              int
}

func (e *msgExtra) zero() bool {
	return e.tags == nil && e.hash == nil && e.reactions == nil && e.mentions == nil && !e.hasEdited && e.edited == 0 &&
		e.flagCount == 0 && e.reactionsCount == 0 && e.bits == 0 && e.hashes == 0
}

// extra returns a copy of s's extra fields (zero when there are none).
// Its slices and map are the stored ones: replace them, never edit them.
func (s *msg) extra() msgExtra {
	if s.x == nil {
		return msgExtra{}
	}
	return *s.x
}

// setExtra stores e as s's extra fields (s must be a private copy that is
// not yet stored, or will be stored with replace).
func (s *msg) setExtra(e msgExtra) {
	if e.zero() {
		s.x = nil
		return
	}
	x := e // allocated here only, not for every call
	s.x = &x
}

// tags returns the stored tags, for reading only.
func (s *msg) tags() []string {
	if s.x != nil {
		return s.x.tags
	}
	return nil
}

// reactionCount returns the message's count of reaction name.
func (s *msg) reactionCount(name string) int {
	if s.x != nil {
		return s.x.reactions[name]
	}
	return 0
}

// ms converts a time to Unix milliseconds after normalizing it as nt does.
func ms(t time.Time) int64 { return chat.NewTime(t).UnixMilli() }

// fromMS is the inverse of ms: the same value nt makes of the original.
func fromMS(v int64) chat.Time { return chat.NewTime(time.UnixMilli(v)) }

// toMsg makes the stored form of m (normalized, sharing nothing with m).
func (d *data) toMsg(m *chat.Message) (*msg, error) {
	enc, err := d.encodeData(m.Data)
	if err != nil {
		return nil, err
	}
	s := &msg{
		id:       m.MessageID,
		ch:       d.intern(m.ChannelID),
		user:     d.intern(m.UserID),
		typ:      d.intern(string(m.Type)),
		parentID: m.ParentID,
		data:     enc,
		created:  ms(m.CreatedAt.Time),
		updated:  ms(m.UpdatedAt.Time),
		seg:      m.ChannelSegment,
		children: m.ChildrenNumber,
		deleted:  m.IsDeleted,
	}
	e := msgExtra{
		hash:           slices.Clone(m.Hashflag.Hash),
		reactions:      cloneCounts(m.Reactions),
		flagCount:      m.FlagCount,
		reactionsCount: m.ReactionsCount,
		bits:           m.Hashflag.Bits,
		hashes:         m.Hashflag.Hashes,
	}
	if len(m.MentionedUserIDs) > 0 {
		e.mentions = slices.Clone(m.MentionedUserIDs)
	}
	if len(m.Tags) > 0 {
		e.tags = slices.Clone(m.Tags)
	} else {
		s.emptyTags = m.Tags != nil
	}
	if m.EditedAt != nil {
		e.hasEdited, e.edited = true, ms(m.EditedAt.Time)
	}
	s.setExtra(e)
	return s, nil
}

// message returns a copy of s that shares nothing mutable with the store
// (strings are immutable and may be shared).
func (d *data) message(s *msg) *chat.Message {
	m := &chat.Message{
		MessageID:      s.id,
		ChannelID:      d.str(s.ch),
		UserID:         d.str(s.user),
		Type:           chat.MessageType(d.str(s.typ)),
		Data:           decodeData(s.data),
		ParentID:       s.parentID,
		IsDeleted:      s.deleted,
		CreatedAt:      fromMS(s.created),
		UpdatedAt:      fromMS(s.updated),
		ChannelSegment: s.seg,
		ChildrenNumber: s.children,
	}
	if s.emptyTags {
		m.Tags = []string{}
	}
	if x := s.x; x != nil {
		if x.tags != nil {
			m.Tags = slices.Clone(x.tags)
		}
		m.FlagCount = x.flagCount
		m.Hashflag = chat.Hashflag{Bits: x.bits, Hashes: x.hashes, Hash: slices.Clone(x.hash)}
		m.Reactions = cloneCounts(x.reactions)
		m.ReactionsCount = x.reactionsCount
		if x.mentions != nil {
			m.MentionedUserIDs = slices.Clone(x.mentions)
		}
		if x.hasEdited {
			t := fromMS(x.edited)
			m.EditedAt = &t
		}
	}
	return m
}

// strID is the number of an interned string.
type strID uint32

// intern returns the number of s in the store's string table, adding it
// when new. Stored messages refer to their channel, author and type this
// way: a number is not a pointer, so the garbage collector has nothing to
// follow. Interned strings are never removed; they are channel ids, user
// ids and message types, which are few next to the messages.
func (d *data) intern(s string) strID {
	if id, ok := d.strIDs[s]; ok {
		return id
	}
	id := strID(len(d.strs))
	d.strs = append(d.strs, s)
	d.strIDs[s] = id
	return id
}

// str returns the interned string number id.
func (d *data) str(id strID) string { return d.strs[id] }

// The encoding of custom data: a value is a tag byte followed by its
// content. Strings and map keys are a uvarint length and the bytes; maps
// and arrays a uvarint count and their elements; numbers the 8 bytes of
// the float64. It holds exactly the normalized values normJSON makes (the
// store decodes them back to the same Go values) and no pointers, so the
// garbage collector never scans it.
const (
	encNull   = iota // nil
	encFalse         // false
	encTrue          // true
	encNumber        // float64
	encString        // string
	encObject        // map[string]any
	encNilObj        // map[string]any(nil) inside a value
	encArray         // []any
)

// encodeData encodes the normalized form of an object (normMap's result)
// with the errors normMap gives, into a slice of its own of the exact
// size; nil stays nil. It is called in write transactions only (d.scratch
// is guarded by the write lock).
func (d *data) encodeData(m map[string]any) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	b, err := encodeJSON(d.scratch[:0], m)
	if err != nil {
		return nil, err
	}
	if cap(b) <= 64<<10 {
		d.scratch = b
	}
	return slices.Clone(b), nil
}

// encodeJSON appends the normalized form of v, as normJSON makes it.
func encodeJSON(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, encNull), nil
	case string:
		return appendString(append(b, encString), x), nil
	case bool:
		if x {
			return append(b, encTrue), nil
		}
		return append(b, encFalse), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, chat.Errorf(chat.CodeBadRequest, "value %v cannot be stored as JSON", x)
		}
		return binary.LittleEndian.AppendUint64(append(b, encNumber), math.Float64bits(x)), nil
	case map[string]any:
		if x == nil {
			return append(b, encNilObj), nil
		}
		b = binary.AppendUvarint(append(b, encObject), uint64(len(x)))
		for k, e := range x {
			b = appendString(b, k)
			var err error
			if b, err = encodeJSON(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	case []any:
		b = binary.AppendUvarint(append(b, encArray), uint64(len(x)))
		for _, e := range x {
			var err error
			if b, err = encodeJSON(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	case []string:
		b = binary.AppendUvarint(append(b, encArray), uint64(len(x)))
		for _, e := range x {
			b = appendString(append(b, encString), e)
		}
		return b, nil
	case map[string]string:
		b = binary.AppendUvarint(append(b, encObject), uint64(len(x)))
		for k, e := range x {
			b = appendString(append(appendString(b, k), encString), e)
		}
		return b, nil
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, json.Number:
		n, err := normJSON(x)
		if err != nil {
			return nil, err
		}
		return encodeJSON(b, n)
	}
	// Anything else goes through encoding/json, as normJSON does.
	n, err := normJSON(v)
	if err != nil {
		return nil, err
	}
	return encodeJSON(b, n)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// decodeData decodes what encodeData made; nil stays nil. The strings it
// returns point into b, which the store never modifies after encoding (a
// change stores a new encoding), so they stay valid and immutable.
func decodeData(b []byte) map[string]any {
	if b == nil {
		return nil
	}
	v, _ := decodeJSON(b)
	return v.(map[string]any)
}

func decodeJSON(b []byte) (any, []byte) {
	tag, b := b[0], b[1:]
	switch tag {
	case encFalse:
		return false, b
	case encTrue:
		return true, b
	case encNumber:
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:]
	case encString:
		s, rest := decodeString(b)
		return s, rest
	case encObject:
		n, k := binary.Uvarint(b)
		b = b[k:]
		m := make(map[string]any, n)
		for range n {
			var key string
			key, b = decodeString(b)
			m[key], b = decodeJSON(b)
		}
		return m, b
	case encNilObj:
		return map[string]any(nil), b
	case encArray:
		n, k := binary.Uvarint(b)
		b = b[k:]
		a := make([]any, n)
		for i := range a {
			a[i], b = decodeJSON(b)
		}
		return a, b
	}
	return nil, b
}

func decodeString(b []byte) (string, []byte) {
	n, k := binary.Uvarint(b)
	b = b[k:]
	if n == 0 {
		return "", b
	}
	return unsafe.String(&b[0], int(n)), b[n:]
}
