package chat

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Detail is one item of the structured detail of an Error (data.detail on
// the wire). The values are FieldError, UserRef, RuleRef, RefusedLink,
// RetryAfter, AllowedMethods and, for an item this package does not know,
// RawDetail. Each is an error, so errors.As finds it in an *Error's chain;
// each marshals to the JSON object the API has always sent.
type Detail interface {
	error
	isDetail()
}

// FieldError names the input field a CodeBadRequest error refuses
// ({"field": ...}). UserIDs lists the users the field named that were
// refused, when there were such (muting users who are not members).
type FieldError struct {
	Field   string   `json:"field"`
	UserIDs []string `json:"userIds,omitempty"`
}

// Error implements the error interface.
func (d FieldError) Error() string {
	if len(d.UserIDs) > 0 {
		return "invalid " + d.Field + ": " + strings.Join(d.UserIDs, ", ")
	}
	return "invalid " + d.Field
}

// UserRef names the user an error is about ({"userId": ...}): the banned
// user of CodeUserBanned or the globally banned one of CodeGlobalBanned.
type UserRef struct {
	UserID string `json:"userId"`
}

// Error implements the error interface.
func (d UserRef) Error() string { return "user " + quote(d.UserID) }

// RuleRef names a blacklist or whitelist entry ({"ruleId": ...}): the
// entry that matched a text (CodeBlacklisted) or the pattern that does
// not compile (CodeInvalidRegex).
type RuleRef struct {
	RuleID string `json:"ruleId"`
}

// Error implements the error interface.
func (d RuleRef) Error() string { return "rule " + quote(d.RuleID) }

// RefusedLink is the link the whitelist refused (CodeLinkNotAllowed,
// {"url": ...}).
type RefusedLink struct {
	URL string `json:"url"`
}

// Error implements the error interface.
func (d RefusedLink) Error() string { return "link not allowed: " + quote(d.URL) }

// RetryAfter is how long to wait before a refused post may be made
// (CodeRateLimited, slow mode). On the wire it is
// {"retryAfter": whole seconds, at least 1, "retryAfterMs": milliseconds},
// both rounded up.
type RetryAfter struct {
	Wait time.Duration
}

// Error implements the error interface.
func (d RetryAfter) Error() string { return "retry after " + d.Wait.String() }

// Seconds is the wait in whole seconds, rounded up, at least 1 (the
// Retry-After header's value).
func (d RetryAfter) Seconds() int {
	return max(int((d.Wait+time.Second-1)/time.Second), 1)
}

// Milliseconds is the wait in whole milliseconds, rounded up.
func (d RetryAfter) Milliseconds() int64 {
	return int64((d.Wait + time.Millisecond - 1) / time.Millisecond)
}

// retryAfterJSON is the wire form of RetryAfter.
type retryAfterJSON struct {
	RetryAfter   int   `json:"retryAfter"`
	RetryAfterMs int64 `json:"retryAfterMs"`
}

// MarshalJSON implements json.Marshaler.
func (d RetryAfter) MarshalJSON() ([]byte, error) {
	return json.Marshal(retryAfterJSON{d.Seconds(), d.Milliseconds()})
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *RetryAfter) UnmarshalJSON(b []byte) error {
	var w retryAfterJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	d.Wait = time.Duration(w.RetryAfterMs) * time.Millisecond
	if w.RetryAfterMs == 0 {
		d.Wait = time.Duration(w.RetryAfter) * time.Second
	}
	return nil
}

// AllowedMethods lists the methods a path accepts, the detail of a
// request made with another one ({"allow": [...]}).
type AllowedMethods struct {
	Allow []string `json:"allow"`
}

// Error implements the error interface.
func (d AllowedMethods) Error() string { return "allowed methods: " + strings.Join(d.Allow, ", ") }

// RawDetail is a detail item of a kind this package does not know, kept
// as the JSON it came as.
type RawDetail json.RawMessage

// Error implements the error interface.
func (d RawDetail) Error() string { return "detail " + string(d) }

// MarshalJSON implements json.Marshaler.
func (d RawDetail) MarshalJSON() ([]byte, error) {
	if len(d) == 0 {
		return []byte("null"), nil
	}
	return d, nil
}

func (FieldError) isDetail()     {}
func (UserRef) isDetail()        {}
func (RuleRef) isDetail()        {}
func (RefusedLink) isDetail()    {}
func (RetryAfter) isDetail()     {}
func (AllowedMethods) isDetail() {}
func (RawDetail) isDetail()      {}

// ParseDetail reads one item of data.detail back into its Detail type,
// telling the kinds apart by their keys; an item it does not know comes
// back as RawDetail. Only bytes that are not JSON are an error.
func ParseDetail(b []byte) (Detail, error) {
	if !json.Valid(b) {
		return nil, fmt.Errorf("chat: detail item is not JSON: %.40q", b)
	}
	raw := RawDetail(append([]byte(nil), b...))
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) != nil {
		return raw, nil // not an object
	}
	has := func(ks ...string) bool {
		for _, k := range ks {
			if _, ok := keys[k]; !ok {
				return false
			}
		}
		return len(keys) == len(ks)
	}
	var d Detail
	switch {
	case has("field"), has("field", "userIds"):
		d = decodeDetail[FieldError](b)
	case has("userId"):
		d = decodeDetail[UserRef](b)
	case has("ruleId"):
		d = decodeDetail[RuleRef](b)
	case has("url"):
		d = decodeDetail[RefusedLink](b)
	case has("retryAfter", "retryAfterMs"), has("retryAfter"):
		d = decodeDetail[RetryAfter](b)
	case has("allow"):
		d = decodeDetail[AllowedMethods](b)
	}
	if d == nil {
		return raw, nil
	}
	return d, nil
}

// decodeDetail decodes b into a T, or returns nil when the values do not
// have the types T's fields have.
func decodeDetail[T Detail](b []byte) Detail {
	var v T
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return v
}
