package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	chat "github.com/chatengine/chat"
)

// This file writes response bodies: encoding/json encodes every body into
// a pooled buffer, which is sent with a Content-Length (message lists: see
// messagejson.go).

// bufPool holds response buffers. Buffers that grew beyond maxPooledBuf
// are left to the garbage collector.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuf = 256 << 10

// jsonContentType is the Content-Type header value of every response,
// shared (net/http copies header values before it sends them and never
// modifies them).
var jsonContentType = []string{"application/json; charset=utf-8"}

// internalErrorBody is sent when a response cannot be encoded.
const internalErrorBody = `{"status":"error","code":500000,"message":"internal error","data":{"detail":[]}}` + "\n"

// writeJSON writes v as the JSON response body with the given status,
// followed by a newline.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	send(w, status, buf, json.NewEncoder(buf).Encode(v))
}

// writeMessageList writes l as writeJSON would, with each message's
// encoding from messageCache where it has it (messagejson.go).
func writeMessageList(w http.ResponseWriter, l *chat.MessageList) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	var err error
	if b := l.EncodedJSON(); b != nil {
		buf.Write(b) // a created message: encoded once, for its event
	} else {
		err = appendMessageList(buf, l)
	}
	if err == nil {
		buf.WriteByte('\n')
	}
	send(w, http.StatusOK, buf, err)
}

// send writes the response body buf (the internal error body instead when
// err is set) with its status and returns buf to the pool.
func send(w http.ResponseWriter, status int, buf *bytes.Buffer, err error) {
	if err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(internalErrorBody)
	}
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(buf.Len())}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	if buf.Cap() <= maxPooledBuf {
		bufPool.Put(buf)
	}
}
