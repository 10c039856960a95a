package chat

import (
	"context"
	"strings"
	"unicode/utf8"
)

// The actions a pre-send hook answers (see PreSendHook).
const (
	PreSendAllow  = "allow"  // store the message as it is
	PreSendReject = "reject" // refuse it: CodePreSendRejected, nothing stored
	PreSendFlag   = "flag"   // store it with the hook's flag
)

// PreSendHookFlagger is the flagger id of the flag a pre-send hook's
// "flag" answer adds: the empty string, which no user id can be, so the
// hook's flag never takes the place of a user's. It is the flagger in the
// message's hashflag, and message.didFlag carries preSendHook true (and
// the hook's reason) instead of a flaggerId.
const PreSendHookFlagger = ""

// PreSendMessage is what a pre-send hook receives: the message as it
// would be stored. MessageID is the id it will have (a new one for a new
// message); Edit is true when an edit of an existing message is checked,
// whose Data and Tags are then those after the edit.
type PreSendMessage struct {
	MessageID string         `json:"messageId"`
	ChannelID string         `json:"channelId"`
	UserID    string         `json:"userId"`
	Type      MessageType    `json:"type"`
	Data      map[string]any `json:"data"`
	Tags      []string       `json:"tags"`
	ParentID  string         `json:"parentId,omitempty"`
	Edit      bool           `json:"edit"`
}

// PreSendVerdict is a pre-send hook's decision: Action is PreSendAllow,
// PreSendReject or PreSendFlag; Reason explains a reject (shown to the
// author in the error message) or a flag (carried by message.didFlag).
type PreSendVerdict struct {
	Action string
	Reason string
}

// PreSendHook decides about a message before it is stored (new messages
// of every type, and edits). The Service calls it outside any store
// transaction, after the message passed every rule, and stores the
// message only when the verdict is allow or flag. The hook itself applies
// its timeout and its policy on failure (webhook.PreSendHook does), so
// its verdict is final; an unknown action counts as allow.
type PreSendHook interface {
	PreSend(ctx context.Context, m *PreSendMessage) PreSendVerdict
}

// PreSendFlagEventData is the data of the message.didFlag that follows a
// message the pre-send hook flagged: the message and its author, without
// a flaggerId, PreSendHook true and the hook's Reason when it gave one.
type PreSendFlagEventData struct {
	MessageEventData
	PreSendHook bool   `json:"preSendHook"`
	Reason      string `json:"reason,omitempty"`
}

// maxPreSendReason bounds the hook's reason quoted in an error message.
const maxPreSendReason = 500

// hookAnswer is a pre-send hook's answer about a message about to be
// stored: the message's id (the one the hook saw) and whether it flagged
// it, with its reason.
type hookAnswer struct {
	messageID string
	flag      bool
	reason    string
}

// id returns the id of the message the hook saw, or a new one when no
// hook was asked (h nil).
func (h *hookAnswer) id(s *Service) string {
	if h == nil {
		return s.newID()
	}
	return h.messageID
}

// preSend asks the configured hook about m. It returns its answer or a
// CodePreSendRejected error.
func (s *Service) preSend(ctx context.Context, m *PreSendMessage) (*hookAnswer, error) {
	v := s.cfg.PreSendHook.PreSend(ctx, m)
	switch v.Action {
	case PreSendReject:
		reason := strings.TrimSpace(v.Reason)
		if utf8.RuneCountInString(reason) > maxPreSendReason {
			reason = string([]rune(reason)[:maxPreSendReason]) + "…"
		}
		if reason == "" {
			return nil, Errorf(CodePreSendRejected, "message refused by the pre-send hook")
		}
		return nil, Errorf(CodePreSendRejected, "message refused by the pre-send hook: %s", reason)
	case PreSendFlag:
		return &hookAnswer{messageID: m.MessageID, flag: true, reason: v.Reason}, nil
	}
	return &hookAnswer{messageID: m.MessageID}, nil
}

// hookFlag records the pre-send hook's flag on m (about to be stored or
// updated) in tx: the flag row, flagCount and hashflag. It reports
// whether the flag is new (an edit of a message the hook flagged before
// adds none).
func (s *Service) hookFlag(ctx context.Context, tx Tx, m *Message) (bool, error) {
	added, err := tx.AddFlag(ctx, FlagTargetMessage, m.MessageID, PreSendHookFlagger, s.Now().Time)
	if err != nil || !added {
		return false, err
	}
	m.FlagCount++
	m.Hashflag = bloomAdd(m.Hashflag, PreSendHookFlagger)
	return true, nil
}

// insertHooked is insertMessage with the pre-send hook's answer (nil when
// no hook was asked): a flag is stored with the message and emits
// message.didFlag after message.didCreate.
func (s *Service) insertHooked(ctx context.Context, tx Tx, ev *events, pc *postContext, r *newMessage, blobs []*Blob, hook *hookAnswer) (*MessageList, error) {
	if hook == nil || !hook.flag {
		return s.insertMessage(ctx, tx, ev, pc, r, blobs)
	}
	if _, err := s.hookFlag(ctx, tx, &r.m[0]); err != nil {
		return nil, err
	}
	out, err := s.insertMessage(ctx, tx, ev, pc, r, blobs)
	if err != nil {
		return nil, err
	}
	ev.add(EventMessageDidFlag, PreSendFlagEventData{MessageEventData: MessageEventData{Messages: out.Messages, Users: out.Users},
		PreSendHook: true, Reason: hook.reason})
	return out, nil
}
