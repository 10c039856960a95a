package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	chat "github.com/chatengine/chat"
)

// statusOf is the one table from wire error code to HTTP status
// (docs/api.md section 1 (Errors)). Codes missing from it are answered with 500.
var statusOf = map[chat.Code]int{
	chat.CodeBadRequest:       http.StatusBadRequest,
	chat.CodeInvalidRegex:     http.StatusBadRequest,
	chat.CodeUnauthorized:     http.StatusUnauthorized,
	chat.CodeForbidden:        http.StatusForbidden,
	chat.CodePermissionDenied: http.StatusForbidden,
	chat.CodeUserMuted:        http.StatusForbidden,
	chat.CodeChannelMuted:     http.StatusForbidden,
	chat.CodeUserBanned:       http.StatusForbidden,
	chat.CodeBlacklisted:      http.StatusForbidden,
	chat.CodeLinkNotAllowed:   http.StatusForbidden,
	chat.CodeRateLimited:      http.StatusTooManyRequests,
	chat.CodeGlobalBanned:     http.StatusForbidden,
	chat.CodePreSendRejected:  http.StatusForbidden,
	chat.CodeNotFound:         http.StatusNotFound,
	chat.CodeConflict:         http.StatusConflict,
	chat.CodeTooLarge:         http.StatusRequestEntityTooLarge,
	chat.CodeUnsupportedMedia: http.StatusUnsupportedMediaType,
	chat.CodeInternal:         http.StatusInternalServerError,
	chat.CodeUnavailable:      http.StatusServiceUnavailable,
}

// errorBody is the error envelope of every failed request.
type errorBody struct {
	Status  string    `json:"status"`
	Code    chat.Code `json:"code"`
	Message string    `json:"message"`
	Data    errorData `json:"data"`
}

type errorData struct {
	Detail []chat.Detail `json:"detail"`
}

// writeError answers a request with err. A *chat.Error with a 4xx code is
// shown as it is. Anything else, and every 5xx, is logged with the
// request id and answered with a generic message, so no internals leak.
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := chat.CodeInternal
	var ce *chat.Error
	if errors.As(err, &ce) {
		code = ce.Code
	} else if errors.Is(err, context.DeadlineExceeded) {
		code = chat.CodeUnavailable
	}
	status, ok := statusOf[code]
	if !ok {
		code, status = chat.CodeInternal, http.StatusInternalServerError
	}
	body := errorBody{Status: "error", Code: code, Data: errorData{Detail: []chat.Detail{}}}
	rid := RequestIDFrom(r.Context())
	if status >= 500 {
		level := slog.LevelError
		if r.Context().Err() != nil {
			level = slog.LevelInfo // the client went away
		}
		h.log.Log(r.Context(), level, "httpapi: request failed", "requestId", rid,
			"method", r.Method, "path", r.URL.Path, "code", int(code), "err", err)
		body.Message = "internal error; the request id is " + rid
		if code == chat.CodeUnavailable {
			body.Message = "the service is temporarily unavailable, try again later; the request id is " + rid
		}
	} else {
		body.Message = ce.Error()
		if ce.Detail != nil {
			body.Data.Detail = ce.Detail
		}
	}
	switch code {
	case chat.CodeUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="chat"`)
	case chat.CodeRateLimited:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(ce)))
	}
	writeJSON(w, status, body)
}

// retryAfter is the seconds to wait of a rate-limit error (its RetryAfter
// detail); 1 when absent.
func retryAfter(e *chat.Error) int {
	var ra chat.RetryAfter
	if errors.As(e, &ra) {
		return ra.Seconds()
	}
	return 1
}
