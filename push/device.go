package push

import (
	"encoding/hex"
	"encoding/json"
	"strings"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/webhook"
)

// maxTokenLen bounds an APNs or FCM token (real ones are 64 and about
// 160 characters).
const maxTokenLen = 4096

// checkURL applies the webhook address rules to a Web Push endpoint.
func checkURL(endpoint string, allowPrivate bool) error {
	return webhook.CheckURL(endpoint, allowPrivate)
}

// CheckDevice validates a device at registration and returns it with its
// token in canonical form: lower-case hex for APNs, the compact
// PushSubscription JSON ({endpoint, keys{p256dh, auth}}, nothing else) for
// Web Push, the token unchanged for FCM. A Web Push endpoint must be https
// (http too with allowPrivate) and pass the webhook address rules. Errors
// are *chat.Error with CodeBadRequest naming the field (provider or
// token).
func CheckDevice(d Device, allowPrivate bool) (Device, error) {
	bad := func(field, msg string, cause error) error {
		e := chat.WrapError(chat.CodeBadRequest, cause, field+": "+msg)
		e.Detail = []chat.Detail{chat.FieldError{Field: field}}
		return e
	}
	if d.Token == "" {
		return d, bad("token", "is required", nil)
	}
	switch d.Provider {
	case APNs:
		if len(d.Token) > maxTokenLen {
			return d, bad("token", "is too long", nil)
		}
		if _, err := hex.DecodeString(d.Token); err != nil {
			return d, bad("token", "an APNs device token is hexadecimal", err)
		}
		d.Token = strings.ToLower(d.Token)
	case FCM:
		if len(d.Token) > maxTokenLen || strings.ContainsAny(d.Token, " \t\r\n") {
			return d, bad("token", "not an FCM registration token", nil)
		}
	case WebPush:
		sub, _, _, err := ParseSubscription(d.Token, allowPrivate)
		if err != nil {
			return d, bad("token", err.Error(), err)
		}
		b, err := json.Marshal(sub)
		if err != nil {
			return d, bad("token", err.Error(), err)
		}
		d.Token = string(b)
	default:
		return d, bad("provider", "must be apn, firebase or webpush", nil)
	}
	return d, nil
}
