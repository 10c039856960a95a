package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// This file writes response bodies: encoding/json encodes every body into
// a pooled buffer, which is sent with a Content-Length.

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
	if err := json.NewEncoder(buf).Encode(v); err != nil {
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
