package chat

import (
	"context"
	"time"
)

// Store is the persistence port of the engine. Every read and write happens
// inside a transaction: Update runs fn in a read-write transaction that
// commits when fn returns nil and rolls back otherwise (nothing fn wrote is
// visible afterwards); View runs fn in a read-only transaction. A Tx must not
// be used after fn returns. Adapters return *Error values with CodeNotFound,
// CodeConflict or CodeUnavailable for the matching driver errors.
//
// Adapters: store/memory, store/sqlite, store/postgres. Each passes the
// conformance suite in store/storetest.
type Store interface {
	Update(ctx context.Context, fn func(tx Tx) error) error
	View(ctx context.Context, fn func(tx Tx) error) error
	Close() error
}

// OutboxWatcher is implemented by stores that can signal, without polling,
// that deliveries were committed to the outbox. Each call returns a new
// channel (buffer 1) that receives a value after every commit that inserted
// or rescheduled deliveries or appended events (signals may be coalesced), and is closed when ctx
// is done. The Postgres adapter signals across processes with LISTEN/NOTIFY.
type OutboxWatcher interface {
	WatchOutbox(ctx context.Context) (<-chan struct{}, error)
}

// EventWatcher is implemented by stores that can signal, without polling,
// that events were appended to the log. Each call returns a new channel
// (buffer 1) that receives a value after events became readable
// (signals may be coalesced), and nothing for commits that appended none;
// it is closed when ctx is done. The stream hub reads the log when it is
// signalled.
type EventWatcher interface {
	WatchEvents(ctx context.Context) (<-chan struct{}, error)
}

// DeliveryWatcher is implemented by stores that can signal, without
// polling, that webhook deliveries were committed to the outbox. Each call
// returns a new channel (buffer 1) that receives a value after every
// commit that inserted pending deliveries without a lease, rescheduled or
// re-queued deliveries (signals may be coalesced), and nothing for other
// commits (a delivery inserted leased is its owner's already, see
// DeliveryTaker); it is closed when ctx is done. The webhook dispatcher
// claims when it is signalled.
type DeliveryWatcher interface {
	WatchDeliveries(ctx context.Context) (<-chan struct{}, error)
}

// Tx is one transaction: the union of the per-area stores.
//
// Locks: the Get, Query and List methods take no row locks. A transaction
// that reads a row in order to write it, or whose writes depend on what it
// read (a membership, a closed flag), reads it with a method of LockStore,
// which in an Update holds the row until the transaction ends in stores
// whose write transactions run concurrently (Postgres). Writes hold the
// rows they write; writes of channel relations hold the channel's row
// first. Stores that run one write transaction at a time (memory, SQLite)
// need no row locks: their Lock methods read like the Get methods.
type Tx interface {
	LockStore
	ChannelStore
	MessageStore
	SearchStore
	UserStore
	RoleStore
	RuleStore
	ReactionStore
	FlagStore
	AdminStore
	AdminSessionStore
	WebhookStore
	OutboxStore
	EventStore
	BlobStore
	MetaStore
	AuditStore
	PurgeStore
	MuteExpiryStore
	TicketStore
	ReportStore
	UserDataStore
	BlockStore
	DeviceStore
	NotificationStore
	MentionStore
	PushStore
	PresenceStore
}

// LockStore reads rows for a read-modify-write. In an Update of the
// Postgres store each method holds the rows it returns (SELECT ... FOR NO
// KEY UPDATE) until the transaction ends: a row read and then written
// cannot change in between, and another transaction that locks or writes
// the row waits for the holder to end. FOR NO KEY UPDATE does not stop the
// inserts of rows that reference the held row (a message in a held
// channel). In a View, and in stores that run one write transaction at a
// time, each method reads exactly as the matching Get method. A channel's
// relations are locked after the channel's row, by every method and write.
// Postgres detects a deadlock between two transactions that lock rows in
// opposite orders and runs the function it aborted again.
type LockStore interface {
	// LockChannel returns and holds the channel's row, or CodeNotFound.
	LockChannel(ctx context.Context, channelID string) (*Channel, error)
	// LockChannelUser holds the channel's row, then the relation of
	// userID to it, and returns the relation, or CodeNotFound when there
	// is none. A relation read as missing stays missing until the
	// transaction ends (the channel's row, held, guards its relations).
	LockChannelUser(ctx context.Context, channelID, userID string) (*ChannelUser, error)
	// LockChannelUsers holds the channel's row, then returns and holds the
	// relations as GetChannelUsers returns them.
	LockChannelUsers(ctx context.Context, channelID string, userIDs []string) ([]*ChannelUser, error)
	// LockMessage returns and holds the message's row (deleted ones
	// too), or CodeNotFound.
	LockMessage(ctx context.Context, messageID string) (*Message, error)
	// LockUser returns and holds the user's row, or CodeNotFound. Users
	// are read by nearly every transaction (the acting user), so GetUser,
	// GetUsers and EnsureUsers never hold them; a transaction that writes
	// a user reads it with LockUser first. On Postgres, an UpdateUser of
	// a user this transaction read with GetUser, GetUsers or EnsureUsers
	// (existing) rolls the transaction back and runs the function again,
	// reading that user with the lock (see the Postgres package).
	LockUser(ctx context.Context, userID string) (*User, error)
	// LockWebhook returns and holds the webhook (with its secret), or
	// CodeNotFound.
	LockWebhook(ctx context.Context, webhookID string) (*Webhook, error)
	// LockReport returns and holds the report, or CodeNotFound.
	LockReport(ctx context.Context, reportID string) (*Report, error)
}

// ChannelCursor is a keyset position in the newest-first channel order
// (CreatedAt descending, then ChannelID descending).
type ChannelCursor struct {
	CreatedAt time.Time
	ChannelID string
}

// ChannelFilter selects channels. Results are newest first (CreatedAt
// descending, ChannelID descending). With After set, only channels strictly
// after that position in this order; with Before set, only channels strictly
// before it, returned in reverse (oldest first) order so that a caller can
// page backwards. Offset rows are skipped first; Limit > 0 bounds the count.
type ChannelFilter struct {
	MemberOf      string   // only channels this user is a member of
	NotMemberOf   string   // only channels this user is not a member of
	Tags          []string // channels having any of these tags
	ExcludeTags   []string // channels having none of these tags
	IncludeClosed bool
	// Search, when not empty, is a SearchKey: only the channels it
	// matches (see MatchChannel). SQL adapters answer from an index of
	// the keys (IDKey of the channelId, NameKeys of the displayName)
	// written with every channel create and update.
	Search string
	After  *ChannelCursor
	Before *ChannelCursor
	Offset int
	Limit  int
}

// ChannelStore persists channels and memberships.
type ChannelStore interface {
	// CreateChannel inserts c. A channel with the same id, closed or not,
	// is CodeConflict.
	CreateChannel(ctx context.Context, c *Channel) error
	// GetChannel returns the channel or CodeNotFound.
	GetChannel(ctx context.Context, channelID string) (*Channel, error)
	// GetChannels returns the channels that exist among ids, in no order.
	GetChannels(ctx context.Context, ids []string) ([]*Channel, error)
	// UpdateChannel replaces the mutable fields of the channel (displayName,
	// metadata, tags, muteTimeout, lastActivity, updatedAt, isClosed,
	// isRateLimited, rateLimitWindow) by channel id; CodeNotFound if
	// absent. Counters are not written.
	UpdateChannel(ctx context.Context, c *Channel) error
	// NextSegment increments the channel's messageCount, sets lastActivity
	// and updatedAt to now, and returns the updated channel. Concurrent
	// callers get distinct, gapless values. CodeNotFound if absent.
	NextSegment(ctx context.Context, channelID string, now time.Time) (*Channel, error)
	// QueryChannels returns the channels matching f (see ChannelFilter).
	QueryChannels(ctx context.Context, f ChannelFilter) ([]*Channel, error)

	// GetChannelUser returns the relation of the user to the channel or
	// CodeNotFound when there is none.
	GetChannelUser(ctx context.Context, channelID, userID string) (*ChannelUser, error)
	// GetChannelUsers returns the relations of the given users (all of the
	// channel's relations when userIDs is nil), ordered by user id.
	GetChannelUsers(ctx context.Context, channelID string, userIDs []string) ([]*ChannelUser, error)
	// ListMemberships returns the relations of one user to the given
	// channels.
	ListMemberships(ctx context.Context, userID string, channelIDs []string) ([]*ChannelUser, error)
	// PutChannelUser inserts or replaces a relation. It does not write
	// the channel's memberCount (see SetMemberCount).
	PutChannelUser(ctx context.Context, cu *ChannelUser) error
	// MarkRead raises the read marker (ReadToSegment) of the user's
	// relation to the channel to segment, keeps it when it is already at
	// or above segment, and returns the relation; CodeNotFound when there
	// is none. Nothing else of the relation changes (updatedAt neither).
	// PutChannelUser never writes the marker: it keeps the stored one when
	// it replaces a relation and starts a new relation at 0.
	MarkRead(ctx context.Context, channelID, userID string, segment int64) (*ChannelUser, error)
	// CountUnread returns, for each relation cu of cus in order, the
	// counts of rows its unread count is computed from (UnreadFacts): the
	// messageCount of cu.ChannelID (0 when the channel does not exist),
	// the messages of cu.UserID in it whose channelSegment is above
	// cu.ReadToSegment (deleted or not, comments included), and the
	// deleted messages of other authors above it. Each count is read from
	// an index, so the cost does not grow with the number of unread
	// messages. Callers use the package function UnreadCounts.
	CountUnread(ctx context.Context, cus []*ChannelUser) ([]UnreadFacts, error)
	// DeleteChannelUser removes a relation (no-op when absent).
	DeleteChannelUser(ctx context.Context, channelID, userID string) error
	// DeleteChannelUsers removes every relation of the channel.
	DeleteChannelUsers(ctx context.Context, channelID string) error
	// SetMemberCount writes the channel's memberCount (no-op when the
	// channel does not exist). The Service keeps it equal to the number
	// of the channel's relations with membership "member", computed from
	// the channel's row that it holds (LockChannel).
	SetMemberCount(ctx context.Context, channelID string, n int) error
}

// UnreadFacts are the counts of rows that the unread count of one relation
// is computed from (see ChannelStore.CountUnread and UnreadCount).
type UnreadFacts struct {
	// MessageCount is the channel's messageCount, 0 when the channel
	// does not exist.
	MessageCount int64
	// Own counts the user's messages above the marker, deleted or not.
	Own int64
	// DeletedOthers counts the deleted messages of other authors above
	// the marker.
	DeletedOthers int64
}

// UnreadCount is the unread count of a relation whose read marker is
// readTo: the live (not deleted) messages of other authors whose
// channelSegment is above readTo, comments included, 0 when the channel
// does not exist. Every segment up to the channel's messageCount belongs
// to exactly one message (see AppendMessage), so it is messageCount -
// readTo less the user's own messages and the deleted messages of others
// above the marker.
func UnreadCount(readTo int64, f UnreadFacts) int64 {
	return max(0, f.MessageCount-readTo-f.Own-f.DeletedOthers)
}

// UnreadCounts returns the unread count (UnreadCount) of each relation of
// cus, in order, from the counts the store reads (CountUnread).
func UnreadCounts(ctx context.Context, tx Tx, cus []*ChannelUser) ([]int64, error) {
	fs, err := tx.CountUnread(ctx, cus)
	if err != nil {
		return nil, err
	}
	if len(fs) != len(cus) {
		return nil, Errorf(CodeInternal, "store: CountUnread returned %d counts for %d relations", len(fs), len(cus))
	}
	out := make([]int64, len(cus))
	for i, f := range fs {
		out[i] = UnreadCount(cus[i].ReadToSegment, f)
	}
	return out, nil
}

// MessageFilter selects messages of one channel in channelSegment order.
// ParentID selects comments of that message; TopLevel only messages
// without a parent. AfterSegment and BeforeSegment are exclusive bounds
// (0 = unbounded). Descending returns the highest segments first. Limit > 0
// bounds the count.
type MessageFilter struct {
	ChannelID string
	// UserID, when set, keeps only the messages of that author (with
	// ChannelID set; served by an index on channel, author and segment).
	UserID         string
	ParentID       string
	TopLevel       bool
	Tags           []string // any of these tags
	ExcludeTags    []string // none of these tags
	IncludeDeleted bool
	AfterSegment   int64
	BeforeSegment  int64
	Descending     bool
	Limit          int
}

// MessageStore persists messages.
type MessageStore interface {
	// CreateMessage inserts m as given; CodeConflict when its id or its
	// (channelId, channelSegment) exists. m.MentionedUserIDs are stored and
	// indexed for MentionStore. A comment's parent is not changed: the
	// Service writes its childrenNumber with SetChildrenNumber.
	CreateMessage(ctx context.Context, m *Message) error
	// SetChildrenNumber writes the message's childrenNumber (no-op when the
	// message does not exist).
	SetChildrenNumber(ctx context.Context, messageID string, n int) error
	// GetMessage returns the message (deleted ones too) or CodeNotFound.
	GetMessage(ctx context.Context, messageID string) (*Message, error)
	// GetMessages returns the messages that exist among ids, in no order.
	GetMessages(ctx context.Context, ids []string) ([]*Message, error)
	// UpdateMessage replaces data, tags, isDeleted, editedAt, updatedAt,
	// flagCount, hashflag and mentionedUserIds by message id (and the
	// mention index with them); CodeNotFound if absent.
	UpdateMessage(ctx context.Context, m *Message) error
	// QueryMessages returns the messages matching f.
	QueryMessages(ctx context.Context, f MessageFilter) ([]*Message, error)
	// SoftDeleteMessages marks every live message of the channel (of one
	// author when userID is not empty) deleted with data {} and updatedAt
	// now, and returns their ids.
	SoftDeleteMessages(ctx context.Context, channelID, userID string, now time.Time) ([]string, error)
	// SoftDeleteUserMessages does the same for one author in every channel.
	SoftDeleteUserMessages(ctx context.Context, userID string, now time.Time) ([]string, error)
}

// MessageAppender is an optional capability of a Tx: AppendMessage does
// what NextSegment followed by CreateMessage does, in one step where the
// adapter can (one statement, one round trip, on Postgres). Callers use the
// package function AppendMessage, which falls back to the two calls.
type MessageAppender interface {
	// AppendMessage increments the channel's messageCount and sets its
	// lastActivity and updatedAt to now, exactly as NextSegment, and
	// returns the updated channel. Unless that channel is closed, it then
	// stores m with ChannelSegment set to the new messageCount, exactly as
	// CreateMessage (CodeConflict when the id exists). When the channel is closed m is not
	// stored and the caller must fail the transaction, which undoes the
	// increment. CodeNotFound when the channel does not exist.
	AppendMessage(ctx context.Context, m *Message, now time.Time) (*Channel, error)
}

// PostPrefetcher is an optional capability of a Tx: PrefetchPost reads
// at once what the rules of a post by userID in channelID read next (the
// user, the channel, the user's relation to it, the rules and webhooks
// versions), so that the reads that follow cost no further round trip to
// the store. Reads and locks are the same as those of GetUser,
// LockChannel and LockChannelUser in this order, and a missing row is no
// error here (the read that follows reports it).
type PostPrefetcher interface {
	PrefetchPost(ctx context.Context, channelID, userID string) error
}

// AppendMessage allocates the next segment of m.ChannelID and stores m with
// it (see MessageAppender), through the adapter's one-step implementation
// when tx has one, else with NextSegment and CreateMessage. m.ChannelSegment
// is set on success.
func AppendMessage(ctx context.Context, tx Tx, m *Message, now time.Time) (*Channel, error) {
	if a, ok := tx.(MessageAppender); ok {
		c, err := a.AppendMessage(ctx, m, now)
		if err == nil && !c.IsClosed {
			m.ChannelSegment = c.MessageCount
		}
		return c, err
	}
	c, err := tx.NextSegment(ctx, m.ChannelID, now)
	if err != nil || c.IsClosed {
		return c, err
	}
	m.ChannelSegment = c.MessageCount
	return c, tx.CreateMessage(ctx, m)
}

// UserCursor is a keyset position in the user order (UserID ascending).
type UserCursor struct{ UserID string }

// UserFilter selects users ordered by UserID ascending. Search, when not
// empty, is a SearchKey: it matches users one of whose NameKeys, or whose
// IDKey, starts with it (MatchUser), a case-insensitive prefix of any word
// of the displayName (and of the rest of the name from there) or of the
// whole userId. Flagged
// keeps users with flagCount > 0. After/Before work as in ChannelFilter
// (Before returns descending order).
type UserFilter struct {
	Search  string
	Flagged bool
	After   *UserCursor
	Before  *UserCursor
	Limit   int
}

// UserStore persists users.
type UserStore interface {
	// CreateUser inserts u; CodeConflict if the id exists.
	CreateUser(ctx context.Context, u *User) error
	// EnsureUsers creates the users among ids that do not exist (with
	// displayName = userId, createdAt = updatedAt = now) and returns all of
	// them in the order of ids.
	EnsureUsers(ctx context.Context, ids []string, now time.Time) ([]*User, error)
	// GetUser returns the user or CodeNotFound.
	GetUser(ctx context.Context, userID string) (*User, error)
	// GetUsers returns the users that exist among ids, in the order of ids.
	GetUsers(ctx context.Context, ids []string) ([]*User, error)
	// UpdateUser replaces displayName, roles, metadata, flagCount,
	// hashflag, isGlobalBan, tokensRevokedAt and updatedAt; CodeNotFound
	// if absent.
	UpdateUser(ctx context.Context, u *User) error
	// QueryUsers returns the users matching f.
	QueryUsers(ctx context.Context, f UserFilter) ([]*User, error)
}

// RoleStore persists roles.
type RoleStore interface {
	// PutRole inserts or replaces a role (createdAt of an existing role is
	// kept).
	PutRole(ctx context.Context, r *Role) error
	// GetRoles returns the roles that exist among ids.
	GetRoles(ctx context.Context, ids []string) ([]*Role, error)
	// ListRoles returns roles ordered by id, those whose id contains
	// filter (case-insensitive) when filter is not empty.
	ListRoles(ctx context.Context, filter string) ([]*Role, error)
}

// RuleStore persists blacklist and whitelist records.
type RuleStore interface {
	// PutRule inserts or replaces a rule (createdAt of an existing rule is
	// kept).
	PutRule(ctx context.Context, r *Rule) error
	// ListRules returns the rules of a list ordered by id; with ids only
	// those.
	ListRules(ctx context.Context, list RuleList, ids []string) ([]*Rule, error)
	// DeleteRules deletes the rules among ids and returns how many existed.
	DeleteRules(ctx context.Context, list RuleList, ids []string) (int, error)
	// RenameRule changes a rule's id and isMatchExactWord; CodeNotFound if
	// oldID is absent, CodeConflict if newID exists (and differs).
	RenameRule(ctx context.Context, list RuleList, oldID string, r *Rule) error
	// RulesVersion returns a number that changes whenever a rule changes
	// (in any process sharing the store), so rule caches can be refreshed.
	RulesVersion(ctx context.Context) (int64, error)
}

// ReactionCursor is a keyset position in the newest-first reactor order
// (CreatedAt descending, ReactionID descending).
type ReactionCursor struct {
	CreatedAt  time.Time
	ReactionID string
}

// ReactionFilter selects reactions to one message newest first; After,
// Before, Offset and Limit work as in ChannelFilter.
type ReactionFilter struct {
	MessageID    string
	ReactionName string
	After        *ReactionCursor
	Before       *ReactionCursor
	Offset       int
	Limit        int
}

// ReactionStore persists reactions. The message counters (reactions,
// reactionsCount) are computed by AddMessageReaction and
// RemoveMessageReaction and written with SetReactionCounts.
type ReactionStore interface {
	// AddReaction inserts r unless the same (userId, referenceId,
	// reactionName) exists; it returns the stored reaction and whether it
	// was inserted. CodeNotFound when the message does not exist.
	AddReaction(ctx context.Context, r *Reaction) (*Reaction, bool, error)
	// RemoveReaction deletes the (userId, messageId, name) reaction and
	// returns it, or CodeNotFound.
	RemoveReaction(ctx context.Context, userID, messageID, name string) (*Reaction, error)
	// SetReactionCounts writes m.Reactions and m.ReactionsCount to the
	// message m.MessageID, and m.Reactions[name] (0 when absent) as the
	// count of name that MostReacted orders by.
	SetReactionCounts(ctx context.Context, m *Message, name string) error
	// QueryReactions returns reactions matching f.
	QueryReactions(ctx context.Context, f ReactionFilter) ([]*Reaction, error)
	// MostReacted returns live messages with at least one reaction of name
	// (in channelID when not empty) ordered by that reaction's count
	// descending, then createdAt descending, then messageId descending.
	MostReacted(ctx context.Context, name, channelID string, limit int) ([]*Message, error)
}

// FlagStore records who flagged what, one flag per flagger.
type FlagStore interface {
	// AddFlag records that userID flagged target (kind FlagTargetUser or
	// FlagTargetMessage) and reports whether it is new.
	AddFlag(ctx context.Context, kind, targetID, userID string, now time.Time) (bool, error)
	// ClearFlags deletes every flag of the target.
	ClearFlags(ctx context.Context, kind, targetID string) error
}

// AdminStore persists admin accounts.
type AdminStore interface {
	// CreateAdmin inserts a; CodeConflict if the name exists.
	CreateAdmin(ctx context.Context, a *Admin) error
	// GetAdminByTokenHash returns the admin (revoked ones too) or
	// CodeNotFound.
	GetAdminByTokenHash(ctx context.Context, hash []byte) (*Admin, error)
	// ListAdmins returns every admin ordered by name.
	ListAdmins(ctx context.Context) ([]*Admin, error)
	// RevokeAdmin sets revokedAt (kept if already set); CodeNotFound if
	// absent.
	RevokeAdmin(ctx context.Context, name string, now time.Time) error
	// RotateAdmin replaces the admin's token hash and clears revokedAt
	// (a revoked admin is active again under the new token); CodeNotFound
	// if absent, CodeConflict if another admin holds the hash.
	RotateAdmin(ctx context.Context, name string, hash []byte) error
	// GetAdmin returns the admin (revoked ones too) or CodeNotFound.
	GetAdmin(ctx context.Context, name string) (*Admin, error)
	// SetAdminPassword replaces the admin's password hash (empty: none);
	// CodeNotFound if absent.
	SetAdminPassword(ctx context.Context, name string, hash []byte) error
}

// WebhookStore persists webhook registrations.
type WebhookStore interface {
	// CreateWebhook inserts w (with its secret); CodeConflict if the id
	// exists.
	CreateWebhook(ctx context.Context, w *Webhook) error
	// GetWebhook returns the webhook with its secret, or CodeNotFound.
	GetWebhook(ctx context.Context, webhookID string) (*Webhook, error)
	// ListWebhooks returns every webhook, with secrets, ordered by
	// createdAt then id.
	ListWebhooks(ctx context.Context) ([]*Webhook, error)
	// UpdateWebhook replaces url, events, secret, isDisabled,
	// disabledReason and updatedAt; CodeNotFound if absent.
	UpdateWebhook(ctx context.Context, w *Webhook) error
	// DeleteWebhook deletes the webhook and its pending deliveries;
	// CodeNotFound if absent.
	DeleteWebhook(ctx context.Context, webhookID string) error
	// WebhooksVersion returns a number that changes whenever a webhook
	// changes, so caches can be refreshed.
	WebhooksVersion(ctx context.Context) (int64, error)
}

// DeliveryFinish is one attempt to record with FinishDeliveries.
// Delivery is the delivery attempted; it is needed only for a deferred one
// (Delivery.Deferred, see DeliveryDeferrer) and may be nil otherwise.
type DeliveryFinish struct {
	Attempt       *DeliveryAttempt
	State         string
	NextAttemptAt time.Time
	Delivery      *Delivery
}

// DeliveryFinisher is an optional capability of a Tx: FinishDeliveries
// records several attempts of distinct deliveries at once (one statement on
// Postgres), each exactly as FinishDelivery would. Callers use the package
// function FinishDeliveries, which falls back to FinishDelivery.
type DeliveryFinisher interface {
	// FinishDeliveries returns one error per item, in order: nil when
	// recorded, CodeConflict or CodeNotFound as FinishDelivery returns
	// them. A non-nil second result means the statement failed and nothing
	// is known to be recorded (the transaction must fail).
	FinishDeliveries(ctx context.Context, owner string, fs []DeliveryFinish) ([]error, error)
}

// FinishDeliveries records the attempts fs (see DeliveryFinisher) through
// the adapter's batch implementation when tx has one and the request ids
// are distinct, else one FinishDelivery after another. Per item it returns
// nil, or the CodeConflict or CodeNotFound error of that item; any other
// error is returned as the second result.
func FinishDeliveries(ctx context.Context, tx Tx, owner string, fs []DeliveryFinish) ([]error, error) {
	if hasDeferred(fs) {
		return finishWithDeferred(ctx, tx, owner, fs)
	}
	if f, ok := tx.(DeliveryFinisher); ok && len(fs) > 1 && distinctRequests(fs) {
		return f.FinishDeliveries(ctx, owner, fs)
	}
	errs := make([]error, len(fs))
	for i, d := range fs {
		err := tx.FinishDelivery(ctx, owner, d.Attempt, d.State, d.NextAttemptAt)
		if c := ErrorCode(err); err != nil && c != CodeConflict && c != CodeNotFound {
			return nil, err
		}
		errs[i] = err
	}
	return errs, nil
}

func hasDeferred(fs []DeliveryFinish) bool {
	for _, f := range fs {
		if f.Delivery != nil && f.Delivery.Deferred {
			return true
		}
	}
	return false
}

// finishWithDeferred records fs, some of them deferred deliveries
// (FinishDeferred), the others as FinishDeliveries does.
func finishWithDeferred(ctx context.Context, tx Tx, owner string, fs []DeliveryFinish) ([]error, error) {
	dd, ok := tx.(DeliveryDeferrer)
	if !ok {
		return nil, Errorf(CodeInternal, "a deferred delivery's attempt to record in a store that does not defer deliveries")
	}
	errs := make([]error, len(fs))
	var rest []DeliveryFinish
	var at []int // rest[i] is fs[at[i]]
	for i, f := range fs {
		if f.Delivery == nil || !f.Delivery.Deferred {
			rest, at = append(rest, f), append(at, i)
			continue
		}
		err := dd.FinishDeferred(ctx, owner, f.Delivery, f.Attempt, f.State, f.NextAttemptAt)
		if c := ErrorCode(err); err != nil && c != CodeConflict && c != CodeNotFound {
			return nil, err
		}
		errs[i] = err
	}
	if len(rest) > 0 {
		restErrs, err := FinishDeliveries(ctx, tx, owner, rest)
		if err != nil {
			return nil, err
		}
		for i, e := range restErrs {
			errs[at[i]] = e
		}
	}
	return errs, nil
}

func distinctRequests(fs []DeliveryFinish) bool {
	seen := make(map[string]bool, len(fs))
	for _, d := range fs {
		if seen[d.Attempt.RequestID] {
			return false
		}
		seen[d.Attempt.RequestID] = true
	}
	return true
}

// DeliveryQuota bounds how many deliveries of each webhook one
// ClaimDeliveries takes: a dispatcher passes its per-webhook limit and the
// deliveries it has in flight per webhook.
type DeliveryQuota struct {
	// PerWebhook is the most deliveries of one webhook in flight at once;
	// 0 means no bound.
	PerWebhook int
	// Busy counts the deliveries in flight per webhook id.
	Busy map[string]int
}

// Free returns how many more deliveries of webhook id the quota allows,
// or -1 when it sets no bound.
func (q DeliveryQuota) Free(id string) int {
	if q.PerWebhook <= 0 {
		return -1
	}
	return max(0, q.PerWebhook-q.Busy[id])
}

// OutboxStore is the webhook outbox.
type OutboxStore interface {
	// EnqueueDeliveries inserts pending deliveries; CodeConflict if a
	// requestId exists.
	EnqueueDeliveries(ctx context.Context, ds []*Delivery) error
	// ClaimDeliveries leases up to limit pending deliveries whose
	// nextAttemptAt <= now and whose lease is absent or expired, ordered by
	// nextAttemptAt, setting leaseOwner = owner and leaseUntil = now + lease.
	// It takes at most quota.Free(id) deliveries of webhook id, the
	// earliest ones; the others stay due, unleased and unchanged. Those of
	// webhooks without a free slot are passed over and the limit filled
	// from the others; a webhook whose free slots run out within the
	// claim may leave it with fewer than limit while more are due (the
	// next claim passes it over). Two concurrent claims never return the
	// same delivery while its lease lasts (Postgres: FOR UPDATE SKIP
	// LOCKED).
	ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int, quota DeliveryQuota) ([]*Delivery, error)
	// FinishDelivery records an attempt and moves the delivery to state
	// (delivered, failed, or pending again at nextAttemptAt), clearing the
	// lease. The attempt is recorded with the delivery's webhookId and
	// event (a's, when set, are those) and, when a.Attempt is 0, the number
	// of attempts the delivery has with it. It returns CodeConflict when
	// the delivery is no longer leased by owner (the lease expired and
	// another dispatcher took it).
	FinishDelivery(ctx context.Context, owner string, a *DeliveryAttempt, state string, nextAttemptAt time.Time) error
	// GetDelivery returns one delivery or CodeNotFound.
	GetDelivery(ctx context.Context, requestID string) (*Delivery, error)
	// ListDeliveries returns a webhook's deliveries newest first (createdAt
	// then requestId descending), those created before the cursor
	// delivery when beforeRequestID is not empty.
	ListDeliveries(ctx context.Context, webhookID, beforeRequestID string, limit int) ([]*Delivery, error)
	// ListAttempts returns the attempts of one delivery in order.
	ListAttempts(ctx context.Context, requestID string) ([]*DeliveryAttempt, error)
	// RescheduleDelivery sets a delivery pending at nextAttemptAt with no
	// lease (used by redeliver and when a webhook is re-enabled);
	// CodeNotFound if absent.
	RescheduleDelivery(ctx context.Context, requestID string, nextAttemptAt time.Time) error
	// NextDeliveryAt returns the earliest nextAttemptAt of pending
	// deliveries, or ok=false when there are none.
	NextDeliveryAt(ctx context.Context) (t time.Time, ok bool, err error)
	// CountDeliveries returns the outbox backlog at now: the pending
	// deliveries, and among them those due (nextAttemptAt <= now, leased
	// or not). It reads the index of pending deliveries only, so its cost
	// grows with the backlog, never with the delivered history.
	CountDeliveries(ctx context.Context, now time.Time) (OutboxBacklog, error)
}

// OutboxBacklog is the size of the webhook outbox's backlog, shared by
// every process using the store.
type OutboxBacklog struct {
	// Pending counts the deliveries neither delivered nor failed: due now
	// (being sent, or waiting for a dispatcher), or waiting for a retry.
	Pending int64
	// Due counts the pending deliveries whose next attempt is due.
	Due int64
}

// BlobStore persists file and image bytes.
type BlobStore interface {
	// PutBlob inserts or replaces a blob by (messageId, name).
	PutBlob(ctx context.Context, b *Blob) error
	// GetBlob returns a blob or CodeNotFound.
	GetBlob(ctx context.Context, messageID, name string) (*Blob, error)
	// DeleteBlobs deletes every blob of the message.
	DeleteBlobs(ctx context.Context, messageID string) error
	// DeleteChannelBlobs deletes every blob of the channel's messages.
	DeleteChannelBlobs(ctx context.Context, channelID string) error
}

// MetaStore is a small key-value table for engine settings (for example
// the paging-token key shared by every process).
type MetaStore interface {
	// GetMeta returns the value or CodeNotFound.
	GetMeta(ctx context.Context, key string) (string, error)
	// PutMetaIfAbsent stores value unless key exists and returns the value
	// that is stored afterwards.
	PutMetaIfAbsent(ctx context.Context, key, value string) (string, error)
}

// StreamTicket is a single-use ticket of the event stream (POST
// /events/ticket), kept in the store so that a ticket issued by one
// process opens a stream on any process sharing the store. Only the
// ticket's hash is stored: the ticket itself is a credential.
type StreamTicket struct {
	// Hash identifies the ticket: the hex SHA-256 of the ticket string.
	Hash string
	// UserID is the user the ticket opens a stream for: an end user, or
	// an admin's acting user when Admin is set.
	UserID string
	Admin  bool
	// ExpiresAt is when the ticket stops opening streams.
	ExpiresAt Time
	// The access the ticket was issued under (see Access): a ticket opens
	// a stream only while that access is valid, and the stream ends with
	// it. AdminName and TokenHash are the admin account and its token's
	// hash (Admin tickets); TokenIssuedAt and TokenExpiresAt the user
	// token's iat and exp (nil when the claim is absent).
	AdminName      string
	TokenHash      []byte
	TokenIssuedAt  *Time
	TokenExpiresAt *Time
}

// TicketStore keeps the unused stream tickets.
type TicketStore interface {
	// PutTicket stores t. A ticket with the same hash is CodeConflict.
	PutTicket(ctx context.Context, t *StreamTicket) error
	// TakeTicket deletes the ticket with this hash and returns it, or
	// CodeNotFound when there is none. Of several transactions taking one
	// ticket at once, in one process or several, one gets it. Expired
	// tickets are returned too (until deleted): the caller checks
	// ExpiresAt.
	TakeTicket(ctx context.Context, hash string) (*StreamTicket, error)
	// DeleteTicketsBefore deletes up to limit tickets that expired
	// before the given time and returns how many it deleted.
	DeleteTicketsBefore(ctx context.Context, before time.Time, limit int) (int, error)
}
