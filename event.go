package chat

import (
	"encoding/json"
	"math"
	"time"
)

// Event names. The first four are the spec's; the rest are extensions.
const (
	EventMessageDidCreate      = "message.didCreate"
	EventChannelDidCreate      = "channel.didCreate"
	EventChannelDidJoin        = "channel.didJoin"
	EventChannelDidAddUsers    = "channel.didAddUsers"
	EventMessageDidDelete      = "message.didDelete"
	EventChannelDidClose       = "channel.didClose"
	EventChannelDidRemoveUsers = "channel.didRemoveUsers"
	EventChannelDidMute        = "channel.didMute"
	EventChannelDidBanUsers    = "channel.didBanUsers"
	EventChannelDidUnbanUsers  = "channel.didUnbanUsers"
	EventUserDidUpdate         = "user.didUpdate"
	EventUserDidGlobalBan      = "user.didGlobalBan"
	EventUserDidGlobalUnban    = "user.didGlobalUnban"
	EventReactionDidAdd        = "reaction.didAdd"
	EventReactionDidRemove     = "reaction.didRemove"
	EventMessageDidFlag        = "message.didFlag"
	EventMessageDidUpdate      = "message.didUpdate"
	EventChannelDidUpdate      = "channel.didUpdate"
	EventChannelDidUnmute      = "channel.didUnmute"
	EventChannelDidUnmuteUsers = "channel.didUnmuteUsers"
	EventReportDidCreate       = "report.didCreate"
	EventReportDidResolve      = "report.didResolve"
)

// EventNames lists every event the engine emits.
var EventNames = []string{
	EventMessageDidCreate, EventChannelDidCreate, EventChannelDidJoin, EventChannelDidAddUsers,
	EventMessageDidDelete, EventChannelDidClose, EventChannelDidRemoveUsers, EventChannelDidMute,
	EventChannelDidBanUsers, EventChannelDidUnbanUsers, EventUserDidUpdate, EventUserDidGlobalBan,
	EventUserDidGlobalUnban, EventReactionDidAdd, EventReactionDidRemove, EventMessageDidFlag,
	EventMessageDidUpdate, EventChannelDidUpdate, EventChannelDidUnmute, EventChannelDidUnmuteUsers,
	EventReportDidCreate, EventReportDidResolve,
}

// Envelope is the body of every webhook delivery.
type Envelope struct {
	RequestID string          `json:"requestId"`
	WebhookID string          `json:"webhookId"`
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data"`
}

// MessageEventData is the data of message.didCreate, message.didDelete,
// message.didFlag and message.didUpdate. FlaggerID is set on
// message.didFlag only, EditorID on message.didUpdate only. The
// message.didFlag of the pre-send hook's flag is PreSendFlagEventData.
type MessageEventData struct {
	Messages  []Message `json:"messages"`
	Users     []User    `json:"users"`
	FlaggerID string    `json:"flaggerId,omitempty"`
	EditorID  string    `json:"editorId,omitempty"`
}

// ChannelEventData is the data of the channel events. UserIDs are the
// members (channel.didCreate), the joined users (channel.didJoin) or the
// users the action applied to. AdderID is set on channel.didAddUsers;
// MutePeriod on channel.didMute (UserIDs empty when the whole channel was
// muted); Reason on channel.didUnmute and channel.didUnmuteUsers
// (UnmuteExpired or UnmuteManual; ActorID is empty when the mute expired).
type ChannelEventData struct {
	Channel    Channel  `json:"channel"`
	UserIDs    []string `json:"userIds"`
	AdderID    string   `json:"adderId,omitempty"`
	ActorID    string   `json:"actorId,omitempty"`
	MutePeriod *int64   `json:"mutePeriod,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Users      []User   `json:"users"`
}

// Mute returns the mute period of a channel.didMute as a duration:
// MuteForever for mutePeriod -1, Unmute for 0; ok is false on the other
// events, which have no mutePeriod.
func (d *ChannelEventData) Mute() (period time.Duration, ok bool) {
	switch {
	case d.MutePeriod == nil:
		return 0, false
	case *d.MutePeriod == -1:
		return MuteForever, true
	case *d.MutePeriod > math.MaxInt64/int64(time.Millisecond):
		return MuteForever, true
	}
	return time.Duration(*d.MutePeriod) * time.Millisecond, true
}

// UserEventData is the data of user.didUpdate, user.didGlobalBan and
// user.didGlobalUnban.
type UserEventData struct {
	Users []User `json:"users"`
}

// ReactionEventData is the data of reaction.didAdd and reaction.didRemove.
type ReactionEventData struct {
	Reactions []Reaction `json:"reactions"`
	Messages  []Message  `json:"messages"`
	Users     []User     `json:"users"`
}

// Webhook is a registered receiver of events. Events empty means every
// event. Secret is returned only when the webhook is created or its secret
// rotated.
type Webhook struct {
	WebhookID      string   `json:"webhookId"`
	URL            string   `json:"url"`
	Events         []string `json:"events"`
	Secret         string   `json:"secret,omitempty"`
	IsDisabled     bool     `json:"isDisabled"`
	DisabledReason string   `json:"disabledReason,omitempty"`
	CreatedAt      Time     `json:"createdAt"`
	UpdatedAt      Time     `json:"updatedAt"`
}

// Admits reports whether the webhook receives events of the given name.
func (w *Webhook) Admits(event string) bool {
	if w.IsDisabled {
		return false
	}
	if len(w.Events) == 0 {
		return true
	}
	for _, e := range w.Events {
		if e == event {
			return true
		}
	}
	return false
}

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed" // gave up after the last retry, or webhook disabled
)

// Delivery is one event bound for one webhook: a row of the outbox. Body is
// the exact envelope bytes, signed and sent unchanged on every attempt.
// RequestID is the envelope's requestId.
type Delivery struct {
	RequestID     string `json:"requestId"`
	WebhookID     string `json:"webhookId"`
	Event         string `json:"event"`
	Body          []byte `json:"-"`
	State         string `json:"state"`
	Attempts      int    `json:"attempts"`
	NextAttemptAt Time   `json:"nextAttemptAt"`
	LeaseOwner    string `json:"-"`
	LeaseUntil    *Time  `json:"-"`
	// Deferred marks a delivery that the store keeps with its event until
	// its first attempt is recorded (DeliveryDeferrer): its attempt is
	// recorded with FinishDeferred (FinishDeliveries does).
	Deferred   bool   `json:"-"`
	LastError  string `json:"lastError,omitempty"`
	LastStatus int    `json:"lastStatus"`
	CreatedAt  Time   `json:"createdAt"`
	UpdatedAt  Time   `json:"updatedAt"`
}

// DeliveryAttempt records one POST of a delivery.
type DeliveryAttempt struct {
	RequestID  string `json:"requestId"`
	WebhookID  string `json:"webhookId"`
	Event      string `json:"event"`
	Attempt    int    `json:"attempt"`
	StatusCode int    `json:"statusCode"`
	LatencyMs  int64  `json:"latencyMs"`
	Error      string `json:"error,omitempty"`
	At         Time   `json:"at"`
}
