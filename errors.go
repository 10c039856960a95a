package chat

import (
	"errors"
	"fmt"
)

// Code is a wire error code of the admin API. The HTTP status that goes with
// each code lives in package httpapi; Code itself is transport-neutral.
type Code int

// The error codes of docs/api.md section 1 (Errors).
const (
	CodeBadRequest       Code = 400000 // validation, bad token, bad paging token
	CodeInvalidRegex     Code = 400001 // invalid regular expression
	CodeUnauthorized     Code = 400100 // missing, unknown or revoked access token
	CodeForbidden        Code = 400300 // e.g. a write to a closed channel
	CodePermissionDenied Code = 400301 // permission denied
	CodeUserMuted        Code = 400302 // user is muted in this channel
	CodeChannelMuted     Code = 400303 // channel is muted
	CodeUserBanned       Code = 400304 // user is banned from this channel
	CodeBlacklisted      Code = 400308 // text contains a blacklisted word
	CodeLinkNotAllowed   Code = 400309 // link not allowed by the whitelist
	CodeRateLimited      Code = 400311 // rate limited
	CodeGlobalBanned     Code = 400312 // user is globally banned
	CodePreSendRejected  Code = 400313 // refused by the pre-send hook
	CodeNotFound         Code = 400400 // not found
	CodeConflict         Code = 400900 // conflict, e.g. channelId already used
	CodeTooLarge         Code = 400413 // body or upload too large
	CodeUnsupportedMedia Code = 400415 // unsupported media type, not an image
	CodeInternal         Code = 500000 // internal error
	CodeUnavailable      Code = 500300 // store unavailable
)

// String returns a short name for the code.
func (c Code) String() string {
	switch c {
	case CodeBadRequest:
		return "bad request"
	case CodeInvalidRegex:
		return "invalid regular expression"
	case CodeUnauthorized:
		return "unauthorized"
	case CodeForbidden:
		return "forbidden"
	case CodePermissionDenied:
		return "permission denied"
	case CodeUserMuted:
		return "user is muted"
	case CodeChannelMuted:
		return "channel is muted"
	case CodeUserBanned:
		return "user is banned"
	case CodeBlacklisted:
		return "blacklisted word"
	case CodeLinkNotAllowed:
		return "link not allowed"
	case CodeRateLimited:
		return "rate limited"
	case CodeGlobalBanned:
		return "user is globally banned"
	case CodePreSendRejected:
		return "refused by the pre-send hook"
	case CodeNotFound:
		return "not found"
	case CodeConflict:
		return "conflict"
	case CodeTooLarge:
		return "too large"
	case CodeUnsupportedMedia:
		return "unsupported media type"
	case CodeInternal:
		return "internal error"
	case CodeUnavailable:
		return "unavailable"
	}
	return fmt.Sprintf("code %d", int(c))
}

// Error is the error type the Service returns. Code is the wire code,
// Message a sentence a person can act on, Detail optional structured detail
// (for example the blacklist rule that matched, see Detail), and Err an
// optional cause that is never shown to API callers.
//
// errors.As reaches each item of Detail as well as Err:
//
//	var f chat.FieldError
//	if errors.As(err, &f) {
//		// f.Field names the input that was refused
//	}
type Error struct {
	Code    Code
	Message string
	Detail  []Detail
	Err     error
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Code.String() + ": " + e.Err.Error()
	}
	if e.Message == "" {
		return e.Code.String()
	}
	return e.Message
}

// Unwrap returns the cause and the items of Detail, so that errors.Is and
// errors.As look at both.
func (e *Error) Unwrap() []error {
	out := make([]error, 0, len(e.Detail)+1)
	if e.Err != nil {
		out = append(out, e.Err)
	}
	for _, d := range e.Detail {
		out = append(out, d)
	}
	return out
}

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, chat.ErrNotFound) works on any not-found error.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
	}
	return false
}

// Sentinels for errors.Is. Each matches every *Error with its code.
var (
	ErrBadRequest       = &Error{Code: CodeBadRequest}
	ErrInvalidRegex     = &Error{Code: CodeInvalidRegex}
	ErrUnauthorized     = &Error{Code: CodeUnauthorized}
	ErrForbidden        = &Error{Code: CodeForbidden}
	ErrPermissionDenied = &Error{Code: CodePermissionDenied}
	ErrUserMuted        = &Error{Code: CodeUserMuted}
	ErrChannelMuted     = &Error{Code: CodeChannelMuted}
	ErrUserBanned       = &Error{Code: CodeUserBanned}
	ErrBlacklisted      = &Error{Code: CodeBlacklisted}
	ErrLinkNotAllowed   = &Error{Code: CodeLinkNotAllowed}
	ErrRateLimited      = &Error{Code: CodeRateLimited}
	ErrGlobalBanned     = &Error{Code: CodeGlobalBanned}
	ErrNotFound         = &Error{Code: CodeNotFound}
	ErrConflict         = &Error{Code: CodeConflict}
	ErrTooLarge         = &Error{Code: CodeTooLarge}
	ErrUnsupportedMedia = &Error{Code: CodeUnsupportedMedia}
	ErrInternal         = &Error{Code: CodeInternal}
	ErrUnavailable      = &Error{Code: CodeUnavailable}
)

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WrapError returns an *Error with the given code and message wrapping cause.
func WrapError(code Code, cause error, message string) *Error {
	return &Error{Code: code, Message: message, Err: cause}
}

// ErrorCode returns the Code of err: the code of the first *Error in its
// chain, CodeInternal for any other non-nil error, and 0 for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// InvalidField returns a CodeBadRequest error whose message starts with
// the field's name and whose detail is a FieldError naming it.
func InvalidField(field, format string, args ...any) *Error {
	return &Error{Code: CodeBadRequest, Message: field + ": " + fmt.Sprintf(format, args...), Detail: []Detail{FieldError{Field: field}}}
}

// invalid is InvalidField.
func invalid(field, format string, args ...any) *Error { return InvalidField(field, format, args...) }
