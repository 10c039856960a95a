package chat

import (
	"context"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// MessageList is the response of message reads and writes, with the
// authors side-loaded.
type MessageList struct {
	Messages []Message `json:"messages"`
	Users    []User    `json:"users"`
	Paging   *Paging   `json:"paging,omitempty"`
	// encoded is the list's JSON when the Service encoded the list for
	// its event (see EncodedJSON).
	encoded []byte
}

// EncodedJSON returns the list's encoding/json encoding when the Service
// already made it, for the message.didCreate event of the list that
// CreateMessage and the other posting methods return: a caller writing
// the list as JSON (the HTTP API does) need not encode it again. It is nil
// for every other list. The bytes describe the list as it was returned:
// after changing the list, encode it anew. They are shared with the event
// and must not be modified.
func (l *MessageList) EncodedJSON() []byte {
	if l == nil {
		return nil
	}
	return l.encoded
}

// CreateMessageInput is the input of Service.CreateMessage.
type CreateMessageInput struct {
	ChannelID string
	Type      MessageType // MessageTypeText or MessageTypeCustom
	Data      map[string]any
	Tags      []string
	ParentID  string
	// MentionedUserIDs names members the message mentions besides the
	// @userId mentions of a text message's data.text (see docs/api.md,
	// Mentions); each must be a member of the channel.
	MentionedUserIDs []string
}

func presentMessage(m *Message) {
	if m.Data == nil {
		m.Data = map[string]any{}
	}
	if m.Tags == nil {
		m.Tags = []string{}
	}
	if m.Reactions == nil {
		m.Reactions = map[string]int{}
	}
	if m.Hashflag.Hash == nil {
		m.Hashflag.Hash = []uint32{}
	}
	if m.MentionedUserIDs == nil || m.IsDeleted {
		// A deleted message mentions no one (its data is gone too).
		m.MentionedUserIDs = emptyStrings
	}
}

// emptyStrings is the shared empty list of presented messages: never
// appended to, so sharing it allocates nothing.
var emptyStrings = []string{}

func (s *Service) messageList(ctx context.Context, tx Tx, ms []*Message) (*MessageList, error) {
	return s.messageListWith(ctx, tx, ms, nil)
}

// messageListWith is messageList for a caller whose user record the
// transaction has read already (known; nil when none): when the caller is
// among the authors (the common case: one reads the channels one writes
// in), that record is used instead of reading it again.
func (s *Service) messageListWith(ctx context.Context, tx Tx, ms []*Message, known *User) (*MessageList, error) {
	out := &MessageList{Messages: make([]Message, 0, len(ms))}
	ids := make([]string, 0, len(ms))
	s.present(ms...)
	for _, m := range ms {
		out.Messages = append(out.Messages, *m)
		ids = append(ids, m.UserID)
	}
	ids = dedupe(ids)
	k := -1
	if known != nil {
		k = slices.Index(ids, known.UserID)
	}
	if k < 0 {
		us, err := tx.GetUsers(ctx, ids)
		if err != nil {
			return nil, err
		}
		out.Users = userValues(us)
		return out, nil
	}
	others := slices.Delete(slices.Clone(ids), k, k+1)
	got, err := tx.GetUsers(ctx, others)
	if err != nil {
		return nil, err
	}
	// The users in the order of ids, as GetUsers gives them (it leaves
	// out the ids of users that do not exist).
	us := make([]*User, 0, len(got)+1)
	j := 0
	for _, id := range ids {
		switch {
		case id == known.UserID:
			us = append(us, known)
		case j < len(got) && got[j].UserID == id:
			us = append(us, got[j])
			j++
		}
	}
	out.Users = userValues(us)
	return out, nil
}

// stringsOf collects the string values of a JSON-like value.
func stringsOf(v any, out []string) []string {
	switch x := v.(type) {
	case string:
		return append(out, x)
	case map[string]any:
		for _, e := range x {
			out = stringsOf(e, out)
		}
	case []any:
		for _, e := range x {
			out = stringsOf(e, out)
		}
	}
	return out
}

// validateMessage checks type and data and returns the texts the rules
// apply to.
func (s *Service) validateMessage(in *CreateMessageInput) ([]string, error) {
	if err := s.checkID("channelId", in.ChannelID); err != nil {
		return nil, err
	}
	return s.validateContent(in)
}

// validateContent is validateMessage without the channel: parentId, tags,
// type and data.
func (s *Service) validateContent(in *CreateMessageInput) ([]string, error) {
	if in.ParentID != "" {
		if err := s.checkID("parentId", in.ParentID); err != nil {
			return nil, err
		}
	}
	var err error
	if in.Tags, err = s.checkTags("tags", in.Tags); err != nil {
		return nil, err
	}
	switch in.Type {
	case MessageTypeText:
		if in.Data == nil {
			return nil, invalid("data", "is required")
		}
		t, ok := in.Data["text"].(string)
		if !ok {
			return nil, invalid("data.text", "is required and must be a string")
		}
		if n := utf8.RuneCountInString(t); n == 0 || n > s.lim.MaxTextChars {
			return nil, invalid("data.text", "must be 1-%d characters", s.lim.MaxTextChars)
		}
		if !utf8.ValidString(t) {
			return nil, invalid("data.text", "must be valid UTF-8")
		}
		if len(in.Data) > 1 {
			if err := s.checkObject("data", in.Data, s.lim.MaxCustomDataBytes); err != nil {
				return nil, err
			}
			return stringsOf(in.Data, nil), nil
		}
		return []string{t}, nil
	case MessageTypeCustom:
		if in.Data == nil {
			return nil, invalid("data", "is required")
		}
		if err := s.checkObject("data", in.Data, s.lim.MaxCustomDataBytes); err != nil {
			return nil, err
		}
		return stringsOf(in.Data, nil), nil
	case "":
		return nil, invalid("type", "is required (text or custom)")
	}
	return nil, invalid("type", "must be text or custom")
}

// postContext is what the message rules found for an author in a channel.
type postContext struct {
	author  *User
	channel *Channel
	parent  *Message
}

// postKind says what the message rules check: a new message, an edit of
// one already posted, or a dry run for no user in particular.
type postKind int

const (
	// postNew is a new message: every rule, slow mode included.
	postNew postKind = iota
	// postEdit is an edit (editing is posting again): every rule but slow
	// mode, which counts new messages only, and no parent.
	postEdit
	// postAsMember is a dry run for no user in particular: a member of
	// the channel without roles and without messages, so no user record
	// is read and the rules about one (ban, member mute, slow mode) have
	// nothing to refuse; the channel's rules and the content's apply.
	postAsMember
)

// checkPost applies the message rules: author not globally banned, channel
// open, author not banned there, member (unless admin), channel and member
// not muted (unless admin or exempt), slow mode (unless admin or exempt),
// parent a live message of the same channel, and the blacklist and
// whitelist on texts.
//
// An author not stored yet is created when create is set (a post), and
// checked as a user without roles otherwise (CheckPost, read-only).
func (s *Service) checkPost(ctx context.Context, tx Tx, actorID, channelID, parentID string, texts []string, create bool) (*postContext, error) {
	now := s.Now()
	if p, ok := tx.(PostPrefetcher); ok {
		if err := p.PrefetchPost(ctx, channelID, actorID); err != nil {
			return nil, err
		}
	}
	author, err := tx.GetUser(ctx, actorID)
	if ErrorCode(err) == CodeNotFound {
		if create {
			var us []*User
			us, err = tx.EnsureUsers(ctx, []string{actorID}, now.Time)
			if err == nil {
				author = us[0]
			}
		} else {
			author, err = &User{UserID: actorID, DisplayName: actorID}, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return s.checkPostBy(ctx, tx, author, channelID, parentID, texts, postNew)
}

// checkPostBy applies the message rules of checkPost to a post of kind by
// author (a stored user, or one checked as a user without roles; ignored
// for postAsMember).
func (s *Service) checkPostBy(ctx context.Context, tx Tx, author *User, channelID, parentID string, texts []string, kind postKind) (*postContext, error) {
	now := s.Now()
	actorID := author.UserID
	var cl *caller
	var err error
	if kind == postAsMember {
		cl = &caller{member: &ChannelUser{ChannelID: channelID, Membership: MembershipMember}}
	} else if cl, err = s.authorizeUser(ctx, tx, actorID, author, actPostMessage, channelID); err != nil {
		return nil, err
	}
	c, err := openChannel(ctx, tx, channelID)
	if err != nil {
		return nil, err
	}
	admin, perms, cu := cl.admin, cl.perms, cl.member
	if admin {
		// Admins post anywhere (broadcast); their exemptions come from
		// their other roles.
		if perms, _, err = s.permissions(ctx, tx, author); err != nil {
			return nil, err
		}
		if cu, err = tx.LockChannelUser(ctx, channelID, actorID); err != nil && ErrorCode(err) != CodeNotFound {
			return nil, err
		}
	}
	if cu != nil && cu.Membership == MembershipBanned {
		return nil, Errorf(CodeUserBanned, "user %s is banned from channel %s", quote(actorID), quote(channelID))
	}
	isMember := cu != nil && cu.Membership == MembershipMember
	if !admin && !perms[PermExemptFromMute] {
		if c.MuteTimeout != nil && c.MuteTimeout.After(now.Time) {
			return nil, Errorf(CodeChannelMuted, "channel %s is muted", quote(channelID))
		}
		if isMember && cu.MuteTimeout != nil && cu.MuteTimeout.After(now.Time) {
			return nil, Errorf(CodeUserMuted, "user %s is muted in channel %s", quote(actorID), quote(channelID))
		}
	}
	if kind == postNew && c.IsRateLimited && c.RateLimitWindow > 0 && !admin && !perms[PermExemptFromRateLimit] {
		if err := checkRateLimit(ctx, tx, c, actorID, now.Time); err != nil {
			return nil, err
		}
	}
	pc := &postContext{author: author, channel: c}
	if parentID != "" {
		p, err := tx.LockMessage(ctx, parentID)
		if err != nil && ErrorCode(err) != CodeNotFound {
			return nil, err
		}
		if p == nil || p.IsDeleted || p.ChannelID != channelID {
			return nil, invalid("parentId", "must be a live message of channel %s", quote(channelID))
		}
		pc.parent = p
	}
	if err := s.checkContent(ctx, tx, texts, perms); err != nil {
		return nil, err
	}
	return pc, nil
}

// checkContent applies the blacklist and whitelist to the texts of a
// message whose author holds perms.
func (s *Service) checkContent(ctx context.Context, tx Tx, texts []string, perms map[string]bool) error {
	if len(texts) == 0 {
		return nil
	}
	rs, err := s.ruleSetTx(ctx, tx)
	if err != nil {
		return err
	}
	return rs.checkTexts(texts, perms)
}

// postRules is a validated text or custom message and its author: what
// CreateMessage and CheckMessage check with the same two steps,
// preparePost (validation, before the transaction) and runPost (every
// rule that reads the store, inside it).
type postRules struct {
	authorID string
	in       *CreateMessageInput
	texts    []string
}

// preparePost validates in as a post by authorID.
func (s *Service) preparePost(authorID string, in *CreateMessageInput) (*postRules, error) {
	texts, err := s.validateMessage(in)
	if err != nil {
		return nil, err
	}
	if in.MentionedUserIDs, err = s.checkMentionIDs(in.MentionedUserIDs); err != nil {
		return nil, err
	}
	return &postRules{authorID: authorID, in: in, texts: texts}, nil
}

// runPost applies the message rules to p in tx (see checkPost; create
// creates an author not stored yet).
func (s *Service) runPost(ctx context.Context, tx Tx, p *postRules, create bool) (*postContext, error) {
	return s.checkPost(ctx, tx, p.authorID, p.in.ChannelID, p.in.ParentID, p.texts, create)
}

// newMessage is the result of a post: a MessageList of one message and its
// author, made in one allocation.
type newMessage struct {
	list MessageList
	m    [1]Message
	u    [1]User
}

// insertMessage allocates the channel segment and stores r's message with
// its blobs and the message.didCreate event. A comment raises its parent's
// childrenNumber by one: the parent was read under its lock (checkPostBy),
// so comments to one message count one at a time.
func (s *Service) insertMessage(ctx context.Context, tx Tx, ev *events, pc *postContext, r *newMessage, blobs []*Blob) (*MessageList, error) {
	now := s.Now()
	m := &r.m[0]
	m.CreatedAt, m.UpdatedAt = now, now
	c, err := AppendMessage(ctx, tx, m, now.Time)
	if err != nil {
		return nil, err
	}
	if c.IsClosed {
		return nil, Errorf(CodeForbidden, "channel %s is closed", quote(m.ChannelID))
	}
	if p := pc.parent; p != nil {
		if err := tx.SetChildrenNumber(ctx, p.MessageID, p.ChildrenNumber+1); err != nil {
			return nil, err
		}
	}
	for _, b := range blobs {
		b.MessageID, b.ChannelID, b.CreatedAt = m.MessageID, m.ChannelID, now
		if err := tx.PutBlob(ctx, b); err != nil {
			return nil, err
		}
	}
	s.present(m)
	presentUser(pc.author)
	r.u[0] = *pc.author
	r.list = MessageList{Messages: r.m[:], Users: r.u[:]}
	ev.addMessages(EventMessageDidCreate, &r.list)
	if err := s.enqueuePushes(ctx, tx, ev, c, pc.author, m); err != nil {
		return nil, err
	}
	return &r.list, nil
}

// CreateMessage posts a text or custom message (a comment when ParentID is
// set) as the acting admin's user. Emits message.didCreate. Errors:
// CodeBadRequest (validation; parent not a live message of the channel),
// CodeNotFound (channel), CodeForbidden (closed), CodePermissionDenied (not
// a member and not an admin), CodeChannelMuted, CodeUserMuted, CodeRateLimited (slow mode),
// CodeUserBanned, CodeGlobalBanned, CodeBlacklisted, CodeLinkNotAllowed,
// CodePreSendRejected.
//
// With a pre-send hook configured (Config.PreSendHook), a message that
// passed every rule is shown to the hook before it is stored, outside any
// store transaction; a reject answer is CodePreSendRejected with the
// hook's reason and stores nothing; a flag answer stores the message with
// the hook's flag (flagCount 1, PreSendHookFlagger) and emits
// message.didFlag after message.didCreate. Image and file messages go
// through the hook the same way.
func (s *Service) CreateMessage(ctx context.Context, actorID string, in CreateMessageInput) (*MessageList, error) {
	p, err := s.preparePost(actorID, &in)
	if err != nil {
		return nil, err
	}
	// hook is nil without a pre-send hook: the path is then what it
	// was without one (one pointer more in the closure).
	var hook *hookAnswer
	if s.cfg.PreSendHook != nil {
		// The rules first (a message they refuse never reaches the hook),
		// then the hook outside any transaction; the rules run again
		// where the message is stored.
		if err := s.view(ctx, func(tx Tx) error {
			_, err := s.runPost(ctx, tx, p, false)
			return err
		}); err != nil {
			return nil, err
		}
		if hook, err = s.preSend(ctx, &PreSendMessage{MessageID: s.newID(), ChannelID: in.ChannelID, UserID: actorID,
			Type: in.Type, Data: in.Data, Tags: emptyIfNil(in.Tags), ParentID: in.ParentID}); err != nil {
			return nil, err
		}
	}
	var out *MessageList
	// Posting is the hot path: the store need not wait for the event's id
	// (on Postgres the event reaches the log a moment after the commit),
	// posts may share a transaction and its commit (WithCommitGroup; the
	// channel's row lock is what they would wait for), and the store may
	// read what the post's rules read ahead with other posts' (runPost
	// begins with PrefetchPost of the channel and the author).
	gctx := WithPostReads(WithCommitGroup(WithoutEventIDs(ctx), in.ChannelID), p.in.ChannelID, p.authorID)
	err = s.update(gctx, func(tx Tx, ev *events) error {
		pc, err := s.runPost(ctx, tx, p, true)
		if err != nil {
			return err
		}
		mentioned, err := s.mentions(ctx, tx, in.ChannelID, actorID, mentionText(in.Type, in.Data), in.MentionedUserIDs)
		if err != nil {
			return err
		}
		r := &newMessage{m: [1]Message{{MessageID: hook.id(s), ChannelID: in.ChannelID, UserID: actorID, Type: in.Type,
			Data: in.Data, Tags: emptyIfNil(in.Tags), ParentID: in.ParentID, MentionedUserIDs: mentioned}}}
		out, err = s.insertHooked(ctx, tx, ev, pc, r, nil, hook)
		return err
	})
	return out, err
}

// CheckPost reports whether the acting admin's user may post to the
// channel now (same rules as CreateMessage, without text rules). Upload
// handlers call it before processing a large upload. Errors:
// CodeBadRequest, CodeNotFound (channel), CodeForbidden (closed),
// CodePermissionDenied, CodeChannelMuted, CodeUserMuted, CodeRateLimited, CodeUserBanned,
// CodeGlobalBanned.
func (s *Service) CheckPost(ctx context.Context, actorID, channelID, parentID string) error {
	if err := s.checkID("channelId", channelID); err != nil {
		return err
	}
	return s.view(ctx, func(tx Tx) error {
		_, err := s.checkPost(ctx, tx, actorID, channelID, parentID, nil, false)
		return err
	})
}

// ImageRendition is one processed size of an image message.
type ImageRendition struct {
	Name        string // small, medium, large or full
	ContentType string
	Width       int
	Height      int
	Data        []byte
}

// CreateImageMessageInput is the input of Service.CreateImageMessage. The renditions
// come from package media (the Service does no image processing).
type CreateImageMessageInput struct {
	ChannelID  string
	Caption    string
	Tags       []string
	ParentID   string
	FileName   string
	MimeType   string // of the upload
	Width      int    // of the oriented original
	Height     int
	Renditions []ImageRendition
}

// CreateFileMessageInput is the input of Service.CreateFileMessage.
type CreateFileMessageInput struct {
	ChannelID string
	Tags      []string
	ParentID  string
	FileName  string
	MimeType  string
	Data      []byte
}

// SafeFileName reduces a client-supplied file name to its last path
// element without control characters, quotes or separators (default
// "file").
func SafeFileName(name string) string {
	name = strings.ReplaceAll(name, "\\", "/")
	name = path.Base(name)
	var b strings.Builder
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == '"' || r == '/' || r == ';' || (r >= 0x80 && r < 0xa0) || r == '\u202e' {
			continue
		}
		b.WriteRune(r)
	}
	out := strings.TrimSpace(b.String())
	if out == "" || out == "." || out == ".." {
		out = "file"
	}
	if len(out) > 255 {
		ext := path.Ext(out)
		if len(ext) > 16 {
			ext = ""
		}
		out = strings.ToValidUTF8(out[:255-len(ext)], "") + ext
	}
	return out
}

// CreateImageMessage posts an image message (type "image") whose data is
// {caption, fileId, fileName, mimeType, width, height, sizes}. The caption
// goes through the blacklist and whitelist. Emits message.didCreate.
// Errors: as CreateMessage.
func (s *Service) CreateImageMessage(ctx context.Context, actorID string, in CreateImageMessageInput) (*MessageList, error) {
	base := CreateMessageInput{ChannelID: in.ChannelID, Type: MessageTypeCustom, Data: map[string]any{}, Tags: in.Tags, ParentID: in.ParentID}
	if _, err := s.validateMessage(&base); err != nil {
		return nil, err
	}
	if err := s.checkCaption(in.Caption); err != nil {
		return nil, err
	}
	if len(in.Renditions) == 0 {
		return nil, invalid("file", "no image renditions")
	}
	fileID := s.newID()
	sizes := make([]ImageSize, 0, len(in.Renditions))
	blobs := make([]*Blob, 0, len(in.Renditions))
	for _, r := range in.Renditions {
		sizes = append(sizes, ImageSize{Size: r.Name, Width: r.Width, Height: r.Height, MimeType: r.ContentType, FileSize: int64(len(r.Data))})
		blobs = append(blobs, &Blob{Name: r.Name, ContentType: r.ContentType, Data: r.Data})
	}
	data := ImageData{Caption: in.Caption, FileID: fileID, FileName: SafeFileName(in.FileName),
		MimeType: in.MimeType, Width: in.Width, Height: in.Height, Sizes: sizes}
	var texts []string
	if in.Caption != "" {
		texts = []string{in.Caption}
	}
	var hook *hookAnswer
	if s.cfg.PreSendHook != nil {
		// As in CreateMessage: the rules, then the hook, outside any
		// transaction.
		if err := s.view(ctx, func(tx Tx) error {
			_, err := s.checkPost(ctx, tx, actorID, in.ChannelID, in.ParentID, texts, false)
			return err
		}); err != nil {
			return nil, err
		}
		var err error
		if hook, err = s.preSend(ctx, &PreSendMessage{MessageID: s.newID(), ChannelID: in.ChannelID, UserID: actorID,
			Type: MessageTypeImage, Data: dataOf(data), Tags: emptyIfNil(base.Tags), ParentID: in.ParentID}); err != nil {
			return nil, err
		}
	}
	var out *MessageList
	err := s.update(ctx, func(tx Tx, ev *events) error {
		pc, err := s.checkPost(ctx, tx, actorID, in.ChannelID, in.ParentID, texts, true)
		if err != nil {
			return err
		}
		mentioned, err := s.mentions(ctx, tx, in.ChannelID, actorID, in.Caption, nil)
		if err != nil {
			return err
		}
		r := &newMessage{m: [1]Message{{MessageID: hook.id(s), ChannelID: in.ChannelID, UserID: actorID, Type: MessageTypeImage,
			Data: dataOf(data), Tags: emptyIfNil(base.Tags), ParentID: in.ParentID, MentionedUserIDs: mentioned}}}
		out, err = s.insertHooked(ctx, tx, ev, pc, r, blobs, hook)
		return err
	})
	return out, err
}

// CreateFileMessage posts a file message (type "file") whose data is
// {fileId, fileName, mimeType, size}; the bytes are stored unchanged.
// Emits message.didCreate. Errors: as CreateMessage, and CodeTooLarge.
func (s *Service) CreateFileMessage(ctx context.Context, actorID string, in CreateFileMessageInput) (*MessageList, error) {
	base := CreateMessageInput{ChannelID: in.ChannelID, Type: MessageTypeCustom, Data: map[string]any{}, Tags: in.Tags, ParentID: in.ParentID}
	if _, err := s.validateMessage(&base); err != nil {
		return nil, err
	}
	if int64(len(in.Data)) > s.lim.MaxFileBytes {
		return nil, Errorf(CodeTooLarge, "file is larger than %d bytes", s.lim.MaxFileBytes)
	}
	mt := in.MimeType
	if mt == "" || len(mt) > 255 || hasControl(mt) {
		mt = "application/octet-stream"
	}
	name := SafeFileName(in.FileName)
	data := FileData{FileID: s.newID(), FileName: name, MimeType: mt, Size: int64(len(in.Data))}
	var hook *hookAnswer
	if s.cfg.PreSendHook != nil {
		// As in CreateMessage: the rules, then the hook, outside any
		// transaction.
		if err := s.view(ctx, func(tx Tx) error {
			_, err := s.checkPost(ctx, tx, actorID, in.ChannelID, in.ParentID, nil, false)
			return err
		}); err != nil {
			return nil, err
		}
		var err error
		if hook, err = s.preSend(ctx, &PreSendMessage{MessageID: s.newID(), ChannelID: in.ChannelID, UserID: actorID,
			Type: MessageTypeFile, Data: dataOf(data), Tags: emptyIfNil(base.Tags), ParentID: in.ParentID}); err != nil {
			return nil, err
		}
	}
	var out *MessageList
	err := s.update(ctx, func(tx Tx, ev *events) error {
		pc, err := s.checkPost(ctx, tx, actorID, in.ChannelID, in.ParentID, nil, true)
		if err != nil {
			return err
		}
		r := &newMessage{m: [1]Message{{MessageID: hook.id(s), ChannelID: in.ChannelID, UserID: actorID, Type: MessageTypeFile,
			Data: dataOf(data), Tags: emptyIfNil(base.Tags), ParentID: in.ParentID}}}
		out, err = s.insertHooked(ctx, tx, ev, pc, r, []*Blob{{Name: "file", ContentType: mt, Data: in.Data}}, hook)
		return err
	})
	return out, err
}

// checkCaption validates an image caption ("" is none).
func (s *Service) checkCaption(caption string) error {
	if utf8.RuneCountInString(caption) > s.lim.MaxTextChars || !utf8.ValidString(caption) {
		return invalid("caption", "must be at most %d characters of UTF-8", s.lim.MaxTextChars)
	}
	return nil
}

// GetMessage reads one message (deleted ones too). Errors: CodeBadRequest,
// CodeNotFound.
func (s *Service) GetMessage(ctx context.Context, actorID, messageID string) (*MessageList, error) {
	if err := s.checkID("messageId", messageID); err != nil {
		return nil, err
	}
	var out *MessageList
	err := s.view(ctx, func(tx Tx) error {
		m, err := tx.GetMessage(ctx, messageID)
		if err != nil {
			return notFound(err, "message", messageID)
		}
		if _, err := s.authorize(ctx, tx, actorID, actReadMessages, m.ChannelID); err != nil {
			return err
		}
		out, err = s.messageList(ctx, tx, []*Message{m})
		return err
	})
	return out, err
}

// GetMessageBlob returns the bytes of a file message (name "file") or of
// an image rendition (small, medium, large, full) with the message. A
// deleted message, a message of another type or a rendition that was not
// kept is CodeNotFound. Errors: CodeBadRequest, CodeNotFound.
func (s *Service) GetMessageBlob(ctx context.Context, actorID, messageID, name string) (*Blob, *Message, error) {
	return s.messageBlob(ctx, actorID, messageID, name, false)
}

// messageBlob reads a message's file or rendition. A signed link (signed
// true) has already proved the right to read it; otherwise actorID must
// be allowed to read the message's channel.
func (s *Service) messageBlob(ctx context.Context, actorID, messageID, name string, signed bool) (*Blob, *Message, error) {
	if err := s.checkID("messageId", messageID); err != nil {
		return nil, nil, err
	}
	var b *Blob
	var m *Message
	err := s.view(ctx, func(tx Tx) error {
		var err error
		m, err = tx.GetMessage(ctx, messageID)
		if err != nil {
			return notFound(err, "message", messageID)
		}
		if !signed {
			if _, err := s.authorize(ctx, tx, actorID, actReadMessages, m.ChannelID); err != nil {
				return err
			}
		}
		want := MessageTypeImage
		if name == "file" {
			want = MessageTypeFile
		}
		if m.IsDeleted || m.Type != want {
			return Errorf(CodeNotFound, "message %s has no %s", quote(messageID), name)
		}
		b, err = tx.GetBlob(ctx, messageID, name)
		if ErrorCode(err) == CodeNotFound {
			return Errorf(CodeNotFound, "message %s has no %s", quote(messageID), name)
		}
		return err
	})
	return b, m, err
}

// MessageQuery selects messages of a channel in channelSegment order.
// After and Before are exclusive segment bounds; First is the count after
// (or the oldest n alone), Last the count before (or the newest n alone);
// with neither the newest page comes back. ParentID selects a message's
// comments; FilterByParentID keeps messages without a parent. Deleted
// messages only with IncludeDeleted. Token continues a query.
type MessageQuery struct {
	ChannelID string
	// UserID keeps only the messages of that author (ext).
	UserID           string
	ParentID         string
	FilterByParentID bool
	Tags             []string
	ExcludeTags      []string
	IncludeDeleted   bool
	After            *int64
	Before           *int64
	First            int
	Last             int
	Token            string
}

// QueryMessages lists messages, ascending by channelSegment, with paging
// tokens toward older (previous) and newer (next) messages. Errors:
// CodeBadRequest (validation, bad token), CodeNotFound (channel).
func (s *Service) QueryMessages(ctx context.Context, actorID string, q MessageQuery) (*MessageList, error) {
	if err := s.checkID("channelId", q.ChannelID); err != nil {
		return nil, err
	}
	if q.ParentID != "" {
		if err := s.checkID("parentId", q.ParentID); err != nil {
			return nil, err
		}
	}
	if q.UserID != "" {
		if err := s.checkID("userId", q.UserID); err != nil {
			return nil, err
		}
	}
	if err := s.checkFilterTags("tags", q.Tags); err != nil {
		return nil, err
	}
	if err := s.checkFilterTags("excludeTags", q.ExcludeTags); err != nil {
		return nil, err
	}
	if q.First < 0 || q.First > s.lim.MaxPage {
		return nil, invalid("options.first", "must be 0-%d", s.lim.MaxPage)
	}
	if q.Last < 0 || q.Last > s.lim.MaxPage {
		return nil, invalid("options.last", "must be 0-%d", s.lim.MaxPage)
	}
	if q.After != nil && *q.After < 0 {
		return nil, invalid("options.after", "must not be negative")
	}
	if q.Before != nil && *q.Before < 0 {
		return nil, invalid("options.before", "must not be negative")
	}
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	// The author is hashed only when set, so tokens made before the field
	// existed still work.
	parts := [...]string{q.ChannelID, q.ParentID, flag(q.FilterByParentID), joinList(q.Tags), joinList(q.ExcludeTags), flag(q.IncludeDeleted), q.UserID}
	n := len(parts)
	if q.UserID == "" {
		n--
	}
	qh := queryHash(parts[:n]...)
	f := MessageFilter{ChannelID: q.ChannelID, UserID: q.UserID, ParentID: q.ParentID, TopLevel: q.FilterByParentID && q.ParentID == "",
		Tags: q.Tags, ExcludeTags: q.ExcludeTags, IncludeDeleted: q.IncludeDeleted}
	limit := s.lim.DefaultMessagePage
	if q.Token != "" {
		tok, err := s.decodeToken("options.token", q.Token, "messages", qh)
		if err != nil {
			return nil, err
		}
		if tok.L > 0 && tok.L <= s.lim.MaxPage {
			limit = tok.L
		}
		if tok.D == "n" {
			f.AfterSegment = tok.S
		} else {
			f.BeforeSegment = tok.S
			f.Descending = true
		}
	} else {
		if q.After != nil {
			f.AfterSegment = *q.After
		}
		if q.Before != nil {
			f.BeforeSegment = *q.Before
		}
		switch {
		case q.First > 0:
			limit = q.First
		case q.Last > 0:
			limit = q.Last
			f.Descending = true
		case q.After != nil:
		default:
			f.Descending = true // newest n
		}
	}
	f.Limit = limit + 1
	var out *MessageList
	err := s.view(ctx, func(tx Tx) error {
		cl, err := s.authorize(ctx, tx, actorID, actReadMessages, q.ChannelID)
		if err != nil {
			return err
		}
		ms, err := tx.QueryMessages(ctx, f)
		if err != nil {
			return err
		}
		if cl.member == nil && len(ms) == 0 {
			// Admins and global readers: the channel must exist. A
			// channel with messages does (channels are never deleted),
			// so only an empty page needs to look.
			if _, err := tx.GetChannel(ctx, q.ChannelID); err != nil {
				return notFound(err, "channel", q.ChannelID)
			}
		}
		more := len(ms) > limit
		if more {
			ms = ms[:limit]
		}
		if f.Descending {
			reverse(ms)
		}
		// The messages of users the caller blocks are left out; the
		// page's bounds (and so its tokens) stay those of what was read.
		blocked, err := s.blockedSet(ctx, tx, actorID)
		if err != nil {
			return err
		}
		if out, err = s.messageListWith(ctx, tx, withoutAuthors(ms, blocked), cl.user); err != nil {
			return err
		}
		out.Paging = &Paging{}
		if len(ms) == 0 {
			return nil
		}
		first, last := ms[0].ChannelSegment, ms[len(ms)-1].ChannelSegment
		// Older messages exist when the descending fetch had more, or when
		// one lies before the first row.
		hasOlder, hasNewer := false, false
		if f.Descending {
			hasOlder = more
		} else if more {
			hasNewer = true
		}
		exists := func(g MessageFilter) (bool, error) {
			g.Limit = 1
			r, err := tx.QueryMessages(ctx, g)
			return len(r) > 0, err
		}
		// A page that starts at the very beginning (ascending without a
		// lower bound) or the very end (descending without an upper
		// bound) has nothing beyond that end in this transaction's
		// snapshot, so only a bounded page needs the probe.
		if !f.Descending && !hasOlder && f.AfterSegment > 0 {
			g := f
			g.AfterSegment, g.BeforeSegment, g.Descending = 0, first, true
			if hasOlder, err = exists(g); err != nil {
				return err
			}
		}
		if f.Descending && !hasNewer && f.BeforeSegment > 0 {
			g := f
			g.AfterSegment, g.BeforeSegment, g.Descending = last, 0, false
			if hasNewer, err = exists(g); err != nil {
				return err
			}
		}
		if hasNewer {
			out.Paging.Next = s.encodeToken(pageToken{K: "messages", Q: qh, D: "n", S: last, L: limit})
		}
		if hasOlder {
			out.Paging.Previous = s.encodeToken(pageToken{K: "messages", Q: qh, D: "p", S: first, L: limit})
		}
		return nil
	})
	return out, err
}

// DeleteMessage soft-deletes a message: isDeleted true, data {}, files
// purged, segment kept. Idempotent. Emits message.didDelete the first time.
// Errors: CodeBadRequest, CodeNotFound.
func (s *Service) DeleteMessage(ctx context.Context, actorID, messageID string) error {
	if err := s.checkID("messageId", messageID); err != nil {
		return err
	}
	now := s.Now()
	return s.update(ctx, func(tx Tx, ev *events) error {
		m, err := tx.LockMessage(ctx, messageID)
		if err != nil {
			return notFound(err, "message", messageID)
		}
		act := actDeleteMessage
		if m.UserID == actorID {
			act = actReadMessages // its own, in a channel it may read
		}
		if _, err := s.authorize(ctx, tx, actorID, act, m.ChannelID); err != nil {
			return err
		}
		if act == actDeleteMessage {
			if err := s.audit(ctx, tx, actorID, AuditMessageDelete, AuditTargetMessage, messageID, m.ChannelID,
				map[string]any{"authorId": m.UserID}); err != nil {
				return err
			}
		}
		if m.IsDeleted {
			return nil
		}
		m.IsDeleted = true
		m.Data = map[string]any{}
		m.MentionedUserIDs = nil
		m.UpdatedAt = now
		if err := tx.UpdateMessage(ctx, m); err != nil {
			return err
		}
		if err := tx.DeleteBlobs(ctx, messageID); err != nil {
			return err
		}
		out, err := s.messageList(ctx, tx, []*Message{m})
		if err != nil {
			return err
		}
		ev.add(EventMessageDidDelete, MessageEventData{Messages: out.Messages, Users: out.Users})
		return nil
	})
}

// FlagMessage records that the acting admin's user flagged a message (one
// flag per flagger). Emits message.didFlag when new. Errors:
// CodeBadRequest, CodeNotFound (absent or deleted).
func (s *Service) FlagMessage(ctx context.Context, actorID, messageID string) (*MessageList, error) {
	if err := s.checkID("messageId", messageID); err != nil {
		return nil, err
	}
	now := s.Now()
	var out *MessageList
	err := s.update(ctx, func(tx Tx, ev *events) error {
		m, err := tx.LockMessage(ctx, messageID)
		if err != nil {
			return notFound(err, "message", messageID)
		}
		if _, err := s.authorize(ctx, tx, actorID, actFlagMessage, m.ChannelID); err != nil {
			return err
		}
		if m.IsDeleted {
			return Errorf(CodeNotFound, "message %s is deleted", quote(messageID))
		}
		added, err := tx.AddFlag(ctx, FlagTargetMessage, messageID, actorID, now.Time)
		if err != nil {
			return err
		}
		if added {
			m.FlagCount++
			m.Hashflag = bloomAdd(m.Hashflag, actorID)
			m.UpdatedAt = now
			if err := tx.UpdateMessage(ctx, m); err != nil {
				return err
			}
		}
		if out, err = s.messageList(ctx, tx, []*Message{m}); err != nil {
			return err
		}
		if added {
			ev.add(EventMessageDidFlag, MessageEventData{Messages: out.Messages, Users: out.Users, FlaggerID: actorID})
		}
		return nil
	})
	return out, err
}

// ClearMessageFlags removes every flag of a message. Errors:
// CodeBadRequest, CodeNotFound.
func (s *Service) ClearMessageFlags(ctx context.Context, actorID, messageID string) error {
	if err := s.checkID("messageId", messageID); err != nil {
		return err
	}
	now := s.Now()
	return s.update(ctx, func(tx Tx, _ *events) error {
		if _, err := s.authorize(ctx, tx, actorID, actClearMsgFlags, ""); err != nil {
			return err
		}
		m, err := tx.LockMessage(ctx, messageID)
		if err != nil {
			return notFound(err, "message", messageID)
		}
		if err := tx.ClearFlags(ctx, FlagTargetMessage, messageID); err != nil {
			return err
		}
		if err := s.audit(ctx, tx, actorID, AuditMessageClearFlags, AuditTargetMessage, messageID, m.ChannelID,
			map[string]any{"flagCount": m.FlagCount}); err != nil {
			return err
		}
		if m.FlagCount == 0 {
			return nil
		}
		m.FlagCount = 0
		m.Hashflag = Hashflag{Hash: []uint32{}}
		m.UpdatedAt = now
		return tx.UpdateMessage(ctx, m)
	})
}
