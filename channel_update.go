package chat

import "context"

// UpdateChannelInput is the input of Service.UpdateChannel: the fields to
// change. A nil field is left as it is; at least one must be set.
type UpdateChannelInput struct {
	ChannelID   string
	DisplayName *string
	// Metadata replaces the whole metadata object.
	Metadata *map[string]any
	// Tags replaces the tags (channel queries filter on them).
	Tags *[]string
}

// UpdateChannel changes a channel's displayName, metadata and tags, as
// far as given. Emits channel.didUpdate when anything changed. Returns the
// channel. Errors: CodeBadRequest (validation, nothing to change),
// CodeNotFound, CodeForbidden (closed).
func (s *Service) UpdateChannel(ctx context.Context, actorID string, in UpdateChannelInput) (*ChannelList, error) {
	if err := s.checkID("channelId", in.ChannelID); err != nil {
		return nil, err
	}
	if in.DisplayName == nil && in.Metadata == nil && in.Tags == nil {
		return nil, invalid("displayName", "nothing to change: send displayName, metadata or tags")
	}
	if in.DisplayName != nil {
		if err := s.checkDisplayName("displayName", *in.DisplayName); err != nil {
			return nil, err
		}
	}
	if in.Metadata != nil {
		if err := s.checkObject("metadata", *in.Metadata, s.lim.MaxMetadataBytes); err != nil {
			return nil, err
		}
	}
	tags, err := s.checkNewTags(in.Tags)
	if err != nil {
		return nil, err
	}
	return s.changeChannel(ctx, actorID, actUpdateChannel, in.ChannelID, func(c *Channel) bool {
		if in.DisplayName != nil {
			c.DisplayName = *in.DisplayName
		}
		if in.Metadata != nil {
			c.Metadata = emptyMap(*in.Metadata)
		}
		if in.Tags != nil {
			c.Tags = tags
		}
		return true
	})
}
