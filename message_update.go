package chat

import "context"

// UpdateMessageInput is the input of Service.UpdateMessage: the fields to
// change. A nil field is left as it is; at least one must be set.
type UpdateMessageInput struct {
	MessageID string
	// Data replaces the data of a text or custom message, validated as on
	// create (a text message needs data.text).
	Data *map[string]any
	// Caption replaces the caption of an image message ("" removes it);
	// the file and its renditions stay.
	Caption *string
	// Tags replaces the tags of any message.
	Tags *[]string
	// MentionedUserIDs, with Data or Caption, names members the edited
	// message mentions besides the @userId mentions of its new text (see
	// docs/api.md, Mentions).
	MentionedUserIDs []string
}

// UpdateMessage edits a message: the data of a text or custom message,
// the caption of an image message, the tags of any message. The message
// keeps its id, channel, author and channelSegment; editedAt and
// updatedAt become now. The editor (actorID) must be the author or an
// admin (role global-admin). Editing is posting again: the editor must
// pass every rule a new message by it in that channel would pass (global
// ban, ban, membership, closed channel, channel and member mute, the
// blacklist and whitelist on the new texts, with the editor's
// exemptions), except slow mode. Emits message.didUpdate with the editor
// as editorId. Errors: CodeBadRequest (validation, nothing to change, a
// field the message type does not have), CodeNotFound (absent or deleted
// message), CodeForbidden (closed channel), CodePermissionDenied (neither
// author nor admin; an author no longer a member), CodeUserBanned,
// CodeGlobalBanned, CodeChannelMuted, CodeUserMuted, CodeBlacklisted,
// CodeLinkNotAllowed, CodePreSendRejected. With a pre-send hook configured
// (Config.PreSendHook) the edited message is asked about as a new one
// would be (PreSendMessage.Edit true); a flag answer adds the hook's flag
// unless the message has it already, and emits message.didFlag too.
func (s *Service) UpdateMessage(ctx context.Context, actorID string, in UpdateMessageInput) (*MessageList, error) {
	if err := s.checkID("messageId", in.MessageID); err != nil {
		return nil, err
	}
	if in.Data == nil && in.Caption == nil && in.Tags == nil {
		return nil, invalid("data", "nothing to change: send data, caption or tags")
	}
	tags, err := s.checkNewTags(in.Tags)
	if err != nil {
		return nil, err
	}
	if in.MentionedUserIDs != nil && in.Data == nil && in.Caption == nil {
		return nil, invalid("mentionedUserIds", "only with data or caption: an edit of the text mentions again")
	}
	if in.MentionedUserIDs, err = s.checkMentionIDs(in.MentionedUserIDs); err != nil {
		return nil, err
	}
	if in.Caption != nil {
		if err := s.checkCaption(*in.Caption); err != nil {
			return nil, err
		}
	}
	now := s.Now()
	var hook *hookAnswer
	if s.cfg.PreSendHook != nil {
		// Editing is posting again: the rules first, then the hook with
		// the message as the edit would leave it, outside any
		// transaction; the rules run again where the edit is stored.
		var pm *PreSendMessage
		if err := s.view(ctx, func(tx Tx) error {
			m, err := s.editedMessage(ctx, tx, actorID, in, tags)
			if err == nil {
				pm = &PreSendMessage{MessageID: m.MessageID, ChannelID: m.ChannelID, UserID: m.UserID, Type: m.Type,
					Data: m.Data, Tags: m.Tags, ParentID: m.ParentID, Edit: true}
			}
			return err
		}); err != nil {
			return nil, err
		}
		if hook, err = s.preSend(ctx, pm); err != nil {
			return nil, err
		}
	}
	var out *MessageList
	err = s.update(ctx, func(tx Tx, ev *events) error {
		m, err := s.editedMessage(ctx, tx, actorID, in, tags)
		if err != nil {
			return err
		}
		flagged := false
		if hook != nil && hook.flag {
			if flagged, err = s.hookFlag(ctx, tx, m); err != nil {
				return err
			}
		}
		if in.Data != nil || in.Caption != nil {
			// A new text mentions anew: the mentions of the old one go.
			if m.MentionedUserIDs, err = s.mentions(ctx, tx, m.ChannelID, m.UserID, mentionText(m.Type, m.Data), in.MentionedUserIDs); err != nil {
				return err
			}
		}
		m.EditedAt = &now
		m.UpdatedAt = now
		if err := tx.UpdateMessage(ctx, m); err != nil {
			return err
		}
		if out, err = s.messageList(ctx, tx, []*Message{m}); err != nil {
			return err
		}
		ev.add(EventMessageDidUpdate, MessageEventData{Messages: out.Messages, Users: out.Users, EditorID: actorID})
		if flagged {
			ev.add(EventMessageDidFlag, PreSendFlagEventData{MessageEventData: MessageEventData{Messages: out.Messages, Users: out.Users},
				PreSendHook: true, Reason: hook.reason})
		}
		return nil
	})
	return out, err
}

// editedMessage reads the message in.MessageID and returns it as the edit
// by actorID would leave it (editedAt and updatedAt not set yet), after
// the rules an edit passes (see UpdateMessage). tags are the validated
// new tags. It writes nothing.
func (s *Service) editedMessage(ctx context.Context, tx Tx, actorID string, in UpdateMessageInput, tags []string) (*Message, error) {

	m, err := tx.LockMessage(ctx, in.MessageID)
	if err != nil {
		return nil, notFound(err, "message", in.MessageID)
	}
	if m.IsDeleted {
		return nil, Errorf(CodeNotFound, "message %s is deleted", quote(in.MessageID))
	}
	var texts []string
	switch {
	case in.Data != nil && m.Type != MessageTypeText && m.Type != MessageTypeCustom:
		return nil, invalid("data", "only text and custom messages change their data (this one is %s)", quote(string(m.Type)))
	case in.Caption != nil && m.Type != MessageTypeImage:
		return nil, invalid("caption", "only image messages have a caption (this one is %s)", quote(string(m.Type)))
	case in.Data != nil:
		// Validated as a new message of the same type and channel.
		cm := CreateMessageInput{ChannelID: m.ChannelID, Type: m.Type, Data: *in.Data}
		if texts, err = s.validateMessage(&cm); err != nil {
			return nil, err
		}
	case in.Caption != nil && *in.Caption != "":
		texts = []string{*in.Caption}
	}
	editor, err := tx.GetUser(ctx, actorID)
	if ErrorCode(err) == CodeNotFound {
		return nil, Errorf(CodePermissionDenied, "user %s may not edit message %s", quote(actorID), quote(in.MessageID))
	}
	if err != nil {
		return nil, err
	}
	if m.UserID != actorID {
		// Someone else's message: admins only.
		if _, err := s.authorizeUser(ctx, tx, actorID, editor, actEditMessage, m.ChannelID); err != nil {
			return nil, err
		}
	}
	// Editing is posting again: the editor passes every rule a new
	// message by it would pass there, but slow mode.
	if _, err := s.checkPostBy(ctx, tx, editor, m.ChannelID, "", texts, postEdit); err != nil {
		return nil, err
	}
	switch {
	case in.Data != nil:
		m.Data = *in.Data
	case in.Caption != nil:
		data := make(map[string]any, len(m.Data))
		for k, v := range m.Data {
			data[k] = v
		}
		data["caption"] = *in.Caption
		m.Data = data
	}
	if in.Tags != nil {
		m.Tags = tags
	}
	return m, nil
}
