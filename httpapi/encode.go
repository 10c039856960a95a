package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	chat "github.com/chatengine/chat"
)

// This file writes response bodies. Every body is built in a pooled buffer
// and sent with a Content-Length. The message list (the response of
// message creates and queries, the hottest endpoints) is encoded by hand;
// everything else goes through encoding/json. The hand encoder produces
// byte for byte what json.Marshal produces (TestEncodeMatchesJSON).

// bufPool holds response buffers. Buffers that grew beyond maxPooledBuf
// are left to the garbage collector.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxPooledBuf = 256 << 10

// jsonContentType is the Content-Type header value of every response,
// shared (net/http copies header values before it sends them and never
// modifies them).
var jsonContentType = []string{"application/json; charset=utf-8"}

// writeJSON writes v as the JSON response body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	bp := bufPool.Get().(*[]byte)
	b, err := appendJSON((*bp)[:0], v)
	if err != nil {
		status = http.StatusInternalServerError
		b = append(b[:0], `{"status":"error","code":500000,"message":"internal error","data":{"detail":[]}}`...)
	}
	b = append(b, '\n')
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	_, _ = w.Write(b)
	if cap(b) <= maxPooledBuf {
		*bp = b[:0]
		bufPool.Put(bp)
	}
}

// appendJSON appends the JSON encoding of v to b, as json.Marshal would
// produce it.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case *chat.MessageList:
		if x != nil {
			return appendMessageList(b, x)
		}
	case successBody:
		if x.AddedID == nil && x.RemovedID == nil {
			return append(b, `{"success":`+strconv.FormatBool(x.Success)+`}`...), nil
		}
	}
	return appendMarshal(b, v)
}

// appendMarshal appends json.Marshal's output for v without the copy
// json.Marshal makes.
func appendMarshal(b []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		return b, err
	}
	out := buf.Bytes()
	return out[:len(out)-1], nil // Encode adds a newline
}

func appendMessageList(b []byte, l *chat.MessageList) ([]byte, error) {
	var err error
	b = append(b, `{"messages":`...)
	if l.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range l.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendMessage(b, &l.Messages[i]); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"users":`...)
	if l.Users == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range l.Users {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendUser(b, &l.Users[i]); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	if p := l.Paging; p != nil {
		b = append(b, `,"paging":{`...)
		if p.Next != "" {
			b = append(b, `"next":`...)
			b = appendString(b, p.Next)
		}
		if p.Previous != "" {
			if p.Next != "" {
				b = append(b, ',')
			}
			b = append(b, `"previous":`...)
			b = appendString(b, p.Previous)
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

func appendMessage(b []byte, m *chat.Message) ([]byte, error) {
	var err error
	b = append(b, `{"messageId":`...)
	b = appendString(b, m.MessageID)
	b = append(b, `,"channelId":`...)
	b = appendString(b, m.ChannelID)
	b = append(b, `,"userId":`...)
	b = appendString(b, m.UserID)
	b = append(b, `,"type":`...)
	b = appendString(b, string(m.Type))
	b = append(b, `,"data":`...)
	if b, err = appendObject(b, m.Data); err != nil {
		return b, err
	}
	b = append(b, `,"tags":`...)
	b = appendStrings(b, m.Tags)
	if m.ParentID != "" {
		b = append(b, `,"parentId":`...)
		b = appendString(b, m.ParentID)
	}
	b = append(b, `,"isDeleted":`...)
	b = strconv.AppendBool(b, m.IsDeleted)
	b = append(b, `,"createdAt":`...)
	b = m.CreatedAt.AppendJSON(b)
	b = append(b, `,"editedAt":`...)
	if m.EditedAt == nil {
		b = append(b, "null"...)
	} else {
		b = m.EditedAt.AppendJSON(b)
	}
	b = append(b, `,"updatedAt":`...)
	b = m.UpdatedAt.AppendJSON(b)
	b = append(b, `,"channelSegment":`...)
	b = strconv.AppendInt(b, m.ChannelSegment, 10)
	b = append(b, `,"childrenNumber":`...)
	b = strconv.AppendInt(b, int64(m.ChildrenNumber), 10)
	b = append(b, `,"flagCount":`...)
	b = strconv.AppendInt(b, int64(m.FlagCount), 10)
	b = append(b, `,"hashflag":`...)
	b = appendHashflag(b, &m.Hashflag)
	b = append(b, `,"reactions":`...)
	if m.Reactions == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		keys := make([]string, 0, len(m.Reactions))
		for k := range m.Reactions {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(m.Reactions[k]), 10)
		}
		b = append(b, '}')
	}
	b = append(b, `,"reactionsCount":`...)
	b = strconv.AppendInt(b, int64(m.ReactionsCount), 10)
	return append(b, '}'), nil
}

func appendUser(b []byte, u *chat.User) ([]byte, error) {
	var err error
	b = append(b, `{"userId":`...)
	b = appendString(b, u.UserID)
	b = append(b, `,"displayName":`...)
	b = appendString(b, u.DisplayName)
	b = append(b, `,"roles":`...)
	b = appendStrings(b, u.Roles)
	b = append(b, `,"metadata":`...)
	if b, err = appendObject(b, u.Metadata); err != nil {
		return b, err
	}
	b = append(b, `,"flagCount":`...)
	b = strconv.AppendInt(b, int64(u.FlagCount), 10)
	b = append(b, `,"hashflag":`...)
	b = appendHashflag(b, &u.Hashflag)
	b = append(b, `,"isGlobalBan":`...)
	b = strconv.AppendBool(b, u.IsGlobalBan)
	b = append(b, `,"createdAt":`...)
	b = u.CreatedAt.AppendJSON(b)
	b = append(b, `,"updatedAt":`...)
	b = u.UpdatedAt.AppendJSON(b)
	return append(b, '}'), nil
}

func appendHashflag(b []byte, h *chat.Hashflag) []byte {
	b = append(b, `{"bits":`...)
	b = strconv.AppendInt(b, int64(h.Bits), 10)
	b = append(b, `,"hashes":`...)
	b = strconv.AppendInt(b, int64(h.Hashes), 10)
	b = append(b, `,"hash":`...)
	if h.Hash == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, x := range h.Hash {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, uint64(x), 10)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendObject appends a JSON object of plain values, keys sorted as
// encoding/json sorts them.
func appendObject(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	if len(m) == 0 {
		return append(b, "{}"...), nil
	}
	var arr [8]string
	keys := arr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		if b, err = appendValue(b, m[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendValue appends a value of a JSON document as decoded into any;
// other types go through encoding/json.
func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		return appendFloat(b, x)
	case map[string]any:
		return appendObject(b, x)
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		var err error
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendValue(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	return appendMarshal(b, v)
}

// appendFloat formats a float64 as encoding/json does.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return appendMarshal(b, f) // the same error json.Marshal reports
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string with encoding/json's escaping:
// HTML-safe (<, > and & as \u003c, \u003e, \u0026), invalid UTF-8 as
// \ufffd, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
