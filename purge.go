package chat

import (
	"context"
	"time"
)

// DefaultPurgeBatch is the number of messages PurgeUserMessages deletes
// per transaction when Config.PurgeBatch is zero.
const DefaultPurgeBatch = 500

// PurgeUserMessagesInput is the input of Service.PurgeUserMessages.
type PurgeUserMessagesInput struct {
	UserID    string
	ChannelID string     // one channel; "" for every channel
	Since     *time.Time // only messages created at or after it; nil for all
}

// PurgeResult is the response of a purge.
type PurgeResult struct {
	Success bool `json:"success"`
	Deleted int  `json:"deleted"`
}

// PurgeUserMessages soft-deletes the messages of a user (in every channel
// or one, optionally only those created since a time) that exist when it
// starts, as DeleteMessage does (data {}, files purged, segment kept), and
// returns how many it deleted. It works in bounded batches of
// Config.PurgeBatch messages, each its own transaction with its
// message.didDelete events (one per message), so a user with many messages
// never holds one long transaction: other writes interleave between
// batches. Messages the user posts while the purge runs are left alone.
// The purge is recorded as one user.purgeMessages audit entry, written
// with the first batch and kept up to date by each later one (details
// deleted, channelId, since, complete), so an interrupted purge shows how
// far it went; running it again finishes the job. Admins only. Errors:
// CodeBadRequest, CodePermissionDenied, CodeNotFound (user or channel).
func (s *Service) PurgeUserMessages(ctx context.Context, actorID string, in PurgeUserMessagesInput) (*PurgeResult, error) {
	if err := s.checkID("userId", in.UserID); err != nil {
		return nil, err
	}
	if in.ChannelID != "" {
		if err := s.checkID("channelId", in.ChannelID); err != nil {
			return nil, err
		}
	}
	batch := s.cfg.PurgeBatch
	if batch <= 0 {
		batch = DefaultPurgeBatch
	}
	start := s.Now()
	f := PurgeFilter{UserID: in.UserID, ChannelID: in.ChannelID, Until: start.Time, Limit: batch}
	details := map[string]any{"deleted": 0, "channelId": nil, "since": nil, "complete": false}
	if in.ChannelID != "" {
		details["channelId"] = in.ChannelID
	}
	if in.Since != nil {
		since := NewTime(*in.Since)
		f.Since = since.Time
		details["since"] = since.Format(TimeLayout)
	}
	auditID := s.newID()
	total := 0
	for first := true; ; first = false {
		var deleted []*Message
		err := s.update(ctx, func(tx Tx, ev *events) error {
			deleted = nil
			if _, err := s.authorize(ctx, tx, actorID, actPurgeMessages, ""); err != nil {
				return err
			}
			author, err := tx.GetUser(ctx, in.UserID)
			if err != nil {
				return notFound(err, "user", in.UserID)
			}
			if first && in.ChannelID != "" {
				if _, err := tx.LockChannel(ctx, in.ChannelID); err != nil {
					return notFound(err, "channel", in.ChannelID)
				}
			}
			now := s.Now()
			ms, err := tx.SoftDeleteBatch(ctx, f, now.Time)
			if err != nil {
				return err
			}
			for _, m := range ms {
				if m.Type == MessageTypeImage || m.Type == MessageTypeFile {
					if err := tx.DeleteBlobs(ctx, m.MessageID); err != nil {
						return err
					}
				}
			}
			s.present(ms...)
			presentUser(author)
			users := []User{*author}
			for _, m := range ms {
				ev.add(EventMessageDidDelete, MessageEventData{Messages: []Message{*m}, Users: users})
			}
			d := make(map[string]any, len(details))
			for k, v := range details {
				d[k] = v
			}
			d["deleted"] = total + len(ms)
			d["complete"] = len(ms) < batch
			if first {
				e := &AuditEntry{AuditID: auditID, ActorID: actorID, Action: AuditUserPurgeMessages, TargetType: AuditTargetUser,
					TargetID: in.UserID, ChannelID: in.ChannelID, Details: d, CreatedAt: start}
				if err := tx.AppendAudit(ctx, []*AuditEntry{e}); err != nil {
					return err
				}
			} else if err := tx.SetAuditDetails(ctx, auditID, d); err != nil {
				return err
			}
			deleted = ms
			return nil
		})
		if err != nil {
			return nil, err
		}
		total += len(deleted)
		if len(deleted) < batch {
			return &PurgeResult{Success: true, Deleted: total}, nil
		}
		last := deleted[len(deleted)-1]
		f.After = &PurgeCursor{CreatedAt: last.CreatedAt.Time, MessageID: last.MessageID}
	}
}
