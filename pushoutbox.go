package chat

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"time"
)

// PushDelivery is one push notification in the push outbox: one new
// message for one device. It is written in the message's transaction and
// sent by a push worker (package push), which claims it under a lease,
// records each attempt, and retries it with backoff. A (MessageID,
// DeviceID) pair has at most one push, so a message reaches a device at
// most once through a successful attempt. When the device is deleted its
// pushes go with it.
type PushDelivery struct {
	PushID    string
	MessageID string
	ChannelID string
	// UserID is the recipient, DeviceID its device.
	UserID   string
	DeviceID string
	// Provider and Token address the device; ClaimPushes fills them from
	// the device (they are not stored with the push).
	Provider string
	Token    string
	// Title is the channel's display name; Body "<sender>: <text>" (the
	// text cut to 100 characters) or the sender's name alone.
	Title string
	Body  string
	// State is DeliveryPending, DeliveryDelivered or DeliveryFailed.
	State string
	// Attempts counts the recorded attempts; LastError describes the last
	// failed one.
	Attempts  int
	LastError string
	// NextAttemptAt is when a pending push is due.
	NextAttemptAt Time
	// LeaseOwner and LeaseUntil are set while a worker holds the push.
	LeaseOwner string
	LeaseUntil *Time
	CreatedAt  Time
	UpdatedAt  Time
}

// PushTarget is one device of a channel member, with the member's stored
// notification levels: the facts the push decision is made from.
type PushTarget struct {
	UserID   string
	DeviceID string
	// UserLevel is the member's own level, "" when never set.
	UserLevel NotificationLevel
	// ChannelLevel is the member's level for the channel, "" when none.
	ChannelLevel NotificationLevel
}

// PushBatch is the push decision for one new message, written in the
// message's transaction: one row whatever the number of recipients. A
// push worker expands it into one PushDelivery per device
// (ExpandPushBatches), outside the message's transaction.
type PushBatch struct {
	MessageID string
	ChannelID string
	Title     string
	Body      string
	// UserIDs[i] owns DeviceIDs[i].
	UserIDs   []string
	DeviceIDs []string
	CreatedAt Time
}

// PushStore is the push outbox.
type PushStore interface {
	// EnqueuePushBatch stores a batch; a batch whose message already has
	// one is CodeConflict.
	EnqueuePushBatch(ctx context.Context, b *PushBatch) error
	// ExpandPushBatches turns up to limit batches, oldest first, into
	// pending pushes due at their batch's CreatedAt (PushID
	// "<messageId>/<deviceId>", the other fields from the batch; devices
	// that no longer exist and pairs already in the outbox are left out),
	// deletes those batches, and returns how many it expanded. Two
	// concurrent expansions never expand one batch twice.
	ExpandPushBatches(ctx context.Context, limit int) (int, error)
	// ListPushTargets returns one row per device of every member
	// (membership "member") of the channel other than excludeUserID,
	// ordered by user id then device id. Members without a device are
	// left out.
	ListPushTargets(ctx context.Context, channelID, excludeUserID string) ([]*PushTarget, error)
	// EnqueuePushes inserts pushes (Provider and Token are not stored).
	// A push whose (MessageID, DeviceID) is already in the outbox, or
	// whose device no longer exists, is left out without error.
	EnqueuePushes(ctx context.Context, ps []*PushDelivery) error
	// ClaimPushes leases up to limit pending pushes whose nextAttemptAt
	// <= now and whose lease is absent or expired, ordered by
	// nextAttemptAt then pushId, setting leaseOwner = owner and leaseUntil
	// = now + lease, and returns them with their device's provider and
	// token. Two concurrent claims never return the same push while its
	// lease lasts (Postgres: FOR UPDATE SKIP LOCKED).
	ClaimPushes(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]*PushDelivery, error)
	// FinishPush records an attempt of a push that owner leased: it adds
	// one to attempts and sets state, lastError, updatedAt = now and,
	// when state is pending, nextAttemptAt; the lease is cleared.
	// CodeConflict when the push is not pending or not leased by owner
	// (the lease expired and another worker took it); CodeNotFound when
	// it does not exist (its device was deleted).
	FinishPush(ctx context.Context, owner, pushID, state, lastError string, nextAttemptAt, now time.Time) error
	// ListPushes returns the pushes of a message ordered by pushId
	// (Provider and Token empty).
	ListPushes(ctx context.Context, messageID string) ([]*PushDelivery, error)
	// DeleteFinishedPushes deletes up to limit pushes that are no longer
	// pending (delivered or failed) and were last updated before before,
	// and returns how many it deleted.
	DeleteFinishedPushes(ctx context.Context, before time.Time, limit int) (int, error)
	// CountPushes returns the push outbox's backlog at now (pending, and
	// due among them), batches not yet expanded left out.
	CountPushes(ctx context.Context, now time.Time) (OutboxBacklog, error)
}

// maxPushText is how many characters of a message's text a push body
// carries.
const maxPushText = 100

// effectiveLevel is the level that applies to a target: its channel
// level, else its own level, else NotifyAll.
func (t *PushTarget) effectiveLevel() NotificationLevel {
	switch {
	case t.ChannelLevel != "" && t.ChannelLevel != NotifyDefault:
		return t.ChannelLevel
	case t.UserLevel != "":
		return t.UserLevel
	}
	return NotifyAll
}

// wantsPush reports whether a target's level admits a push for a message
// (a comment when comment is set) that mentions the target's user or not.
// Comments reach only the users they mention.
func (t *PushTarget) wantsPush(comment, mentioned bool) bool {
	switch t.effectiveLevel() {
	case NotifyNone:
		return false
	case NotifyMentions:
		return mentioned
	}
	return mentioned || !comment
}

// pushRecipients is the push decision: the targets (devices of channel
// members other than the author) that get a push for a message from
// authorID, a comment when comment is set. A target gets one when its
// level admits the message (see wantsPush), its user has no open stream
// (online), and its user does not block the author (blockers).
func pushRecipients(authorID string, comment bool, targets []*PushTarget, mentioned, online, blockers map[string]bool) []*PushTarget {
	var out []*PushTarget
	for _, t := range targets {
		if t.UserID == authorID || online[t.UserID] || blockers[t.UserID] {
			continue
		}
		if t.wantsPush(comment, mentioned[t.UserID]) {
			out = append(out, t)
		}
	}
	return out
}

// pushBody is the body of a message's push: "<sender>: <text>" with the
// text (or image caption) cut to maxPushText characters, or the sender's
// name alone (no text, or Config.PushWithoutText).
func (s *Service) pushBody(sender string, m *Message) string {
	if s.cfg.PushWithoutText {
		return sender
	}
	text, _ := m.Text()
	if m.Type == MessageTypeImage {
		text, _ = m.Data["caption"].(string)
	}
	if text == "" {
		return sender
	}
	i := 0
	for pos := range text {
		if i == maxPushText {
			text = text[:pos]
			break
		}
		i++
	}
	return sender + ": " + text
}

// enqueuePushes makes the push decision for a new message m of channel c
// by author and writes it to the outbox as one PushBatch, in the
// message's transaction; the push worker makes the per-device pushes.
func (s *Service) enqueuePushes(ctx context.Context, tx Tx, ev *events, c *Channel, author *User, m *Message) error {
	targets, err := tx.ListPushTargets(ctx, m.ChannelID, m.UserID)
	if err != nil || len(targets) == 0 {
		return err
	}
	mentioned := map[string]bool{}
	for _, id := range m.MentionedUserIDs {
		mentioned[id] = true
	}
	comment := m.ParentID != ""
	// Presence and blocks are read only for the users whose level admits
	// the message.
	var users []string
	for _, t := range targets {
		if t.wantsPush(comment, mentioned[t.UserID]) && (len(users) == 0 || users[len(users)-1] != t.UserID) {
			users = append(users, t.UserID)
		}
	}
	if len(users) == 0 {
		return nil
	}
	// Presence is read in the message's transaction.
	online, err := s.onlineIn(ctx, tx, users)
	if err != nil {
		return err
	}
	bs, err := tx.BlockersAmong(ctx, m.UserID, users)
	if err != nil {
		return err
	}
	blockers := make(map[string]bool, len(bs))
	for _, id := range bs {
		blockers[id] = true
	}
	recips := pushRecipients(m.UserID, comment, targets, mentioned, online, blockers)
	if len(recips) == 0 {
		return nil
	}
	title := c.DisplayName
	if title == "" {
		title = c.ChannelID
	}
	sender := author.DisplayName
	if sender == "" {
		sender = author.UserID
	}
	b := &PushBatch{MessageID: m.MessageID, ChannelID: m.ChannelID, Title: title, Body: s.pushBody(sender, m),
		UserIDs: make([]string, len(recips)), DeviceIDs: make([]string, len(recips)), CreatedAt: m.CreatedAt}
	for i, t := range recips {
		b.UserIDs[i], b.DeviceIDs[i] = t.UserID, t.DeviceID
	}
	ev.pushes += len(recips)
	return tx.EnqueuePushBatch(ctx, b)
}

// vapidMetaKey names the server's VAPID key in the meta table.
const vapidMetaKey = "vapid_key"

// sharedVAPIDKey returns key when set, else the P-256 key kept in the
// store's meta table (PKCS#8 DER in base64), created on first use, so
// every process sharing the store signs with one key pair.
func sharedVAPIDKey(ctx context.Context, store Store, key *ecdsa.PrivateKey) (*ecdsa.PrivateKey, error) {
	if key != nil {
		if key.Curve != elliptic.P256() {
			return nil, errors.New("chat: the VAPID key must be a P-256 key")
		}
		return key, nil
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	var stored string
	if err := store.Update(ctx, func(tx Tx) error {
		stored, err = tx.PutMetaIfAbsent(ctx, vapidMetaKey, base64.StdEncoding.EncodeToString(der))
		return err
	}); err != nil {
		return nil, err
	}
	der, err = base64.StdEncoding.DecodeString(stored)
	if err != nil {
		return nil, errors.New("chat: stored VAPID key is corrupt")
	}
	pk, err := x509.ParsePKCS8PrivateKey(der)
	ek, ok := pk.(*ecdsa.PrivateKey)
	if err != nil || !ok || ek.Curve != elliptic.P256() {
		return nil, errors.New("chat: stored VAPID key is corrupt")
	}
	return ek, nil
}

// VAPIDKey returns the server's VAPID key pair (Web Push, RFC 8292):
// Config.VAPIDKey, or the key made once and kept in the store.
func (s *Service) VAPIDKey() *ecdsa.PrivateKey { return s.vapid }

// VAPIDPublicKey is the response of GET /push/vapid: the server's VAPID
// public key as browsers take it (PushManager.subscribe's
// applicationServerKey): the uncompressed P-256 point in base64url
// without padding.
type VAPIDPublicKey struct {
	PublicKey string `json:"publicKey"`
}

// PushVAPIDKey returns the server's VAPID public key. Anyone may read it:
// it is public.
func (s *Service) PushVAPIDKey() (*VAPIDPublicKey, error) {
	b, err := s.vapid.PublicKey.Bytes()
	if err != nil {
		return nil, err
	}
	return &VAPIDPublicKey{PublicKey: base64.RawURLEncoding.EncodeToString(b)}, nil
}
