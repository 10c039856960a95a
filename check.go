package chat

import (
	"context"
	"encoding/json"
	"errors"
)

// CheckResult is the answer of a moderation dry run: Allowed, or the code,
// message and detail that creating the message would have failed with.
type CheckResult struct {
	Allowed bool     `json:"allowed"`
	Code    Code     `json:"code,omitempty"`
	Message string   `json:"message,omitempty"`
	Detail  []Detail `json:"detail,omitempty"`
}

// CheckMessage is a dry run of CreateMessage: it applies to a text or
// custom message by userID every rule that creating it would apply
// (validation, global ban, channel closed, ban, membership, channel and
// member mute, slow mode, parent, blacklist and whitelist, with the
// user's exemptions), through the same code, and changes nothing (no
// message, no slow-mode state, no user is created). A message that
// CreateMessage would refuse gives Allowed false with the code, message
// and detail CreateMessage would return. With in.ChannelID empty only the
// content rules run (validation of type, data and tags, blacklist and
// whitelist), as an admin panel's "test a text" box needs. A user not
// stored yet is checked as a user without roles. With userID empty the
// message is checked for no user in particular: as a member of the
// channel without roles (so without exemptions) who has not posted there
// yet; the channel's rules (closed, muted) and the content's apply. Admins
// only. Errors (about the check itself, not the message): CodeBadRequest
// (userId), CodePermissionDenied.
func (s *Service) CheckMessage(ctx context.Context, actorID, userID string, in CreateMessageInput) (*CheckResult, error) {
	if userID != "" {
		if err := s.checkID("userId", userID); err != nil {
			return nil, err
		}
	}
	var verdict error
	err := s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, actCheckMessage, ""); err != nil {
			return err
		}
		if in.ChannelID == "" {
			verdict = s.checkContentOnly(ctx, tx, userID, &in)
			return nil
		}
		p, err := s.preparePost(userID, &in)
		switch {
		case err != nil:
		case userID == "":
			_, err = s.checkPostBy(ctx, tx, &User{}, p.in.ChannelID, p.in.ParentID, p.texts, postAsMember)
		default:
			_, err = s.runPost(ctx, tx, p, false)
		}
		verdict = err
		return nil
	})
	if err != nil {
		return nil, err
	}
	return checkResult(verdict)
}

// checkContentOnly validates the content of in and applies the blacklist
// and whitelist with the exemptions of userID (none when userID is empty).
func (s *Service) checkContentOnly(ctx context.Context, tx Tx, userID string, in *CreateMessageInput) error {
	texts, err := s.validateContent(in)
	if err != nil {
		return err
	}
	if userID == "" {
		return s.checkContent(ctx, tx, texts, nil)
	}
	var perms map[string]bool
	u, err := tx.GetUser(ctx, userID)
	switch {
	case err == nil:
		if perms, _, err = s.permissions(ctx, tx, u); err != nil {
			return err
		}
	case ErrorCode(err) != CodeNotFound:
		return err
	}
	return s.checkContent(ctx, tx, texts, perms)
}

// checkResult turns the outcome of the message rules into a CheckResult;
// store failures stay errors.
func checkResult(err error) (*CheckResult, error) {
	if err == nil {
		return &CheckResult{Allowed: true}, nil
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Code == CodeInternal || ce.Code == CodeUnavailable {
		return nil, err
	}
	detail := ce.Detail
	if detail == nil {
		detail = []Detail{}
	}
	return &CheckResult{Code: ce.Code, Message: ce.Error(), Detail: detail}, nil
}

// UnmarshalJSON implements json.Unmarshaler: detail items are read with
// ParseDetail.
func (r *CheckResult) UnmarshalJSON(b []byte) error {
	var w struct {
		Allowed bool              `json:"allowed"`
		Code    Code              `json:"code"`
		Message string            `json:"message"`
		Detail  []json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = CheckResult{Allowed: w.Allowed, Code: w.Code, Message: w.Message}
	for _, raw := range w.Detail {
		d, err := ParseDetail(raw)
		if err != nil {
			return err
		}
		r.Detail = append(r.Detail, d)
	}
	return nil
}
