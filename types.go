package chat

import (
	"encoding/json"
	"time"
)

// TimeLayout is the wire format of every timestamp: ISO 8601 UTC with
// milliseconds, for example 2018-11-30T11:39:20.149Z.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Time is an instant in UTC with millisecond precision. It marshals to JSON
// as TimeLayout (always three fractional digits and a Z).
type Time struct{ time.Time }

// NewTime returns t in UTC truncated to milliseconds.
func NewTime(t time.Time) Time { return Time{t.UTC().Truncate(time.Millisecond)} }

// TimePtr returns a pointer to NewTime(t).
func TimePtr(t time.Time) *Time { v := NewTime(t); return &v }

// Forever is the muteTimeout of a channel or member muted with mutePeriod -1.
var Forever = NewTime(time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC))

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	return t.AppendJSON(make([]byte, 0, len(TimeLayout)+2)), nil
}

// AppendJSON appends t to b as a JSON string in TimeLayout (UTC, three
// fractional digits, a Z), as MarshalJSON does.
func (t Time) AppendJSON(b []byte) []byte {
	b = append(b, '"')
	b = t.appendText(b)
	return append(b, '"')
}

// appendText appends t in TimeLayout. The time package formats RFC 3339
// (whole seconds, "Z" in UTC) on a fast path that a custom layout does not
// take: the milliseconds go in before the "Z".
func (t Time) appendText(b []byte) []byte {
	u := t.Time.UTC()
	if y := u.Year(); y < 0 || y > 9999 {
		return u.AppendFormat(b, "2006-01-02T15:04:05.000Z")
	}
	b = u.AppendFormat(b, time.RFC3339)
	ms := u.Nanosecond() / 1e6
	b[len(b)-1] = '.'
	return append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	p, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*t = NewTime(p)
	return nil
}

// ChannelType is the type of a channel.
type ChannelType string

// The channel types.
const (
	ChannelTypeStandard ChannelType = "standard"
)

// Channel is a chat channel. Field names follow the spec's section 2.
// MessageCount is the number of messages ever posted in the channel, which is
// also its last channelSegment; deleting a message does not lower it.
// IsMuted is derived from MuteTimeout at read time, so a mute expires by
// time alone. RateLimitWindow > 0 puts the channel in slow mode (each
// member may post one message per RateLimitWindow milliseconds, which
// RateLimit returns as a time.Duration; see Service.SetChannelRateLimit),
// and IsRateLimited says so.
type Channel struct {
	ChannelID       string         `json:"channelId"`
	Type            ChannelType    `json:"type"`
	DisplayName     string         `json:"displayName"`
	IsDistinct      bool           `json:"isDistinct"`
	Metadata        map[string]any `json:"metadata"`
	Tags            []string       `json:"tags"`
	IsMuted         bool           `json:"isMuted"`
	MuteTimeout     *Time          `json:"muteTimeout"`
	LastActivity    Time           `json:"lastActivity"`
	CreatedAt       Time           `json:"createdAt"`
	UpdatedAt       Time           `json:"updatedAt"`
	IsRateLimited   bool           `json:"isRateLimited"`
	RateLimitWindow int            `json:"rateLimitWindow"`
	MemberCount     int            `json:"memberCount"`
	MessageCount    int64          `json:"messageCount"`
	IsClosed        bool           `json:"isClosed"`
}

// Membership is a user's relation to a channel.
type Membership string

// The memberships of a ChannelUser.
const (
	MembershipMember Membership = "member"
	MembershipBanned Membership = "banned"
	MembershipNone   Membership = "none"
)

// ChannelUser is a user's relation to one channel. A banned user has
// membership "banned" until unbanned; the ban is its own record and removing
// or re-adding never clears it. IsMuted is derived from MuteTimeout.
//
// ReadToSegment is the user's read marker: the highest channelSegment the
// user has marked read (Service.MarkRead), 0 when nothing is read; it only
// moves forward. UnreadCount is derived at read time: the number of live
// (not deleted) messages of other users in the channel with a
// channelSegment above ReadToSegment, comments included.
type ChannelUser struct {
	ChannelID     string     `json:"channelId"`
	UserID        string     `json:"userId"`
	Membership    Membership `json:"membership"`
	IsMuted       bool       `json:"isMuted"`
	MuteTimeout   *Time      `json:"muteTimeout"`
	ReadToSegment int64      `json:"readToSegment"`
	UnreadCount   int64      `json:"unreadCount"`
	// UnreadMentionCount is derived at read time like UnreadCount: the
	// number of live messages above ReadToSegment whose MentionedUserIDs
	// name the user (see docs/api.md, Mentions).
	UnreadMentionCount int64 `json:"unreadMentionCount"`
	CreatedAt          Time  `json:"createdAt"`
	UpdatedAt          Time  `json:"updatedAt"`
}

// MessageType is the type of a message, which says what its data holds.
type MessageType string

// The message types. Text and custom messages are posted with
// Service.CreateMessage, images and files are uploaded.
const (
	MessageTypeText   MessageType = "text"
	MessageTypeCustom MessageType = "custom"
	MessageTypeImage  MessageType = "image"
	MessageTypeFile   MessageType = "file"
)

// Message is a message in a channel. ParentID is set only on comments.
// Reactions maps a reaction name to its count; ReactionsCount is their sum.
// MentionedUserIDs are the members the message mentions (the @userId
// mentions of its text or caption, and those named on create), never its
// author; the Service sets them before the message is stored, and the
// answer always carries the field (empty when none).
type Message struct {
	MessageID      string         `json:"messageId"`
	ChannelID      string         `json:"channelId"`
	UserID         string         `json:"userId"`
	Type           MessageType    `json:"type"`
	Data           map[string]any `json:"data"`
	Tags           []string       `json:"tags"`
	ParentID       string         `json:"parentId,omitempty"`
	IsDeleted      bool           `json:"isDeleted"`
	CreatedAt      Time           `json:"createdAt"`
	EditedAt       *Time          `json:"editedAt"`
	UpdatedAt      Time           `json:"updatedAt"`
	ChannelSegment int64          `json:"channelSegment"`
	ChildrenNumber int            `json:"childrenNumber"`
	FlagCount      int            `json:"flagCount"`
	Hashflag       Hashflag       `json:"hashflag"`
	Reactions      map[string]int `json:"reactions"`
	ReactionsCount int            `json:"reactionsCount"`
	// MentionedUserIDs: see above.
	MentionedUserIDs []string `json:"mentionedUserIds"`
}

// Hashflag is a bloom filter of the ids of the users who flagged an item:
// Bits is the filter's size in bits, Hashes the number of hash functions and
// Hash the bit array as 32-bit words. All zero and empty when unflagged.
type Hashflag struct {
	Bits   int      `json:"bits"`
	Hashes int      `json:"hashes"`
	Hash   []uint32 `json:"hash"`
}

// User is a chat user. Users referenced by id are created on first
// reference with DisplayName = UserID.
type User struct {
	UserID      string         `json:"userId"`
	DisplayName string         `json:"displayName"`
	Roles       []string       `json:"roles"`
	Metadata    map[string]any `json:"metadata"`
	FlagCount   int            `json:"flagCount"`
	Hashflag    Hashflag       `json:"hashflag"`
	IsGlobalBan bool           `json:"isGlobalBan"`
	CreatedAt   Time           `json:"createdAt"`
	UpdatedAt   Time           `json:"updatedAt"`
	// Online is true while the user has an open event stream on any
	// process sharing the store, and for the grace period after its last
	// one closed (see Presence). LastActiveAt is when the user was last
	// online: when its latest stream opened while it is online, when its
	// last stream closed once it is not; nil when it never was. Both are
	// written by the Presence alone: CreateUser and UpdateUser ignore them.
	Online       bool  `json:"online"`
	LastActiveAt *Time `json:"lastActiveAt"`
	// TokensRevokedAt, when set, refuses every user token of this user
	// issued before it (Service.RevokeUserTokens). Never on the wire.
	TokensRevokedAt *Time `json:"-"`
}

// Permissions the engine acts on. Other permission strings are stored and
// returned as given.
const (
	PermExemptFromBlacklist = "User/ExempFromBlacklist"
	PermExemptFromWhitelist = "User/ExempFromWhitelist"
	PermExemptFromMute      = "User/ExemptFromMute"
	// PermExemptFromRateLimit lets a member post in a channel in slow mode
	// (Channel.RateLimitWindow) without waiting.
	PermExemptFromRateLimit = "User/ExemptFromRateLimit"
)

// RoleGlobalAdmin is the built-in role of admin users.
const RoleGlobalAdmin = "global-admin"

// Role is a named set of permissions.
type Role struct {
	RoleID      string   `json:"roleId"`
	Permissions []string `json:"permissions"`
	CreatedAt   Time     `json:"createdAt"`
	UpdatedAt   Time     `json:"updatedAt"`
}

// RuleList names the list a Rule belongs to.
type RuleList string

// The two rule lists.
const (
	Blacklist RuleList = "blacklist"
	Whitelist RuleList = "whitelist"
)

// Rule is a blacklist or whitelist record. RuleID is the word, URL or
// pattern itself. IsMatchExactWord is meaningful for the blacklist only.
type Rule struct {
	List             RuleList `json:"-"`
	RuleID           string   `json:"ruleId"`
	IsMatchExactWord bool     `json:"isMatchExactWord"`
	CreatedAt        Time     `json:"createdAt"`
	UpdatedAt        Time     `json:"updatedAt"`
}

// ReferenceType is the kind of item a reaction refers to.
type ReferenceType string

// ReferenceTypeMessage is the only reaction reference type.
const ReferenceTypeMessage ReferenceType = "message"

// Reaction is one user's reaction of one name to one message.
type Reaction struct {
	ReactionID    string        `json:"reactionId"`
	ReferenceID   string        `json:"referenceId"`
	ReferenceType ReferenceType `json:"referenceType"`
	ReactionName  string        `json:"reactionName"`
	UserID        string        `json:"userId"`
	CreatedAt     Time          `json:"createdAt"`
}

// Admin is an admin account. Its access token is stored only as a SHA-256
// hash; the token itself is shown once, at creation. PasswordHash is the
// bcrypt hash of its admin panel password, empty while none is set (the
// account cannot sign in to the panel then).
type Admin struct {
	Name         string `json:"name"`
	UserID       string `json:"userId"`
	TokenHash    []byte `json:"-"`
	PasswordHash []byte `json:"-"`
	CreatedAt    Time   `json:"createdAt"`
	RevokedAt    *Time  `json:"revokedAt"`
}

// Flag target kinds.
const (
	FlagTargetUser    = "user"
	FlagTargetMessage = "message"
)

// Blob is stored file or image bytes belonging to a message. Name is "file"
// for file messages and the rendition name ("small", "medium", "large",
// "full") for images.
type Blob struct {
	MessageID   string
	ChannelID   string
	Name        string
	ContentType string
	Data        []byte
	CreatedAt   Time
}
