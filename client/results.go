package client

import (
	"fmt"

	chat "github.com/chatengine/chat"
)

// Channel is one channel as a call returned it. The chat.Channel is
// embedded, so ch.ChannelID, ch.DisplayName and the rest are its fields;
// ChannelUsers and Users are what the API side-loads with it.
type Channel struct {
	chat.Channel
	// ChannelUsers are the channel's relations the call returned: every
	// member and banned user for GetChannel and CreateChannel, the named
	// users for AddUsers, the caller's own for JoinChannel and MarkRead,
	// none for the calls that change the channel itself. Each carries
	// the user's readToSegment and unreadCount.
	ChannelUsers []chat.ChannelUser `json:"channelUsers"`
	// Users are the users the ChannelUsers reference.
	Users []chat.User `json:"users"`
}

// Message is one message as a call returned it. The chat.Message is
// embedded, so m.MessageID, m.Text() and m.Image() are its own; Users
// holds the author, side-loaded by the API.
type Message struct {
	chat.Message
	// Users holds the message's author.
	Users []chat.User `json:"users"`
}

// Author returns the message's author from Users.
func (m *Message) Author() (chat.User, bool) {
	for _, u := range m.Users {
		if u.UserID == m.UserID {
			return u, true
		}
	}
	return chat.User{}, false
}

// errCount is the error of a response that does not hold exactly one
// item where one was expected.
func errCount(what string, n int) error {
	return fmt.Errorf("chat api: expected one %s in the response, got %d", what, n)
}

// oneChannel returns the only channel of a response.
func oneChannel(l *chat.ChannelList, err error) (*Channel, error) {
	if err != nil {
		return nil, err
	}
	if len(l.Channels) != 1 {
		return nil, errCount("channel", len(l.Channels))
	}
	return &Channel{Channel: l.Channels[0], ChannelUsers: l.ChannelUsers, Users: l.Users}, nil
}

// oneMessage returns the only message of a response.
func oneMessage(l *chat.MessageList, err error) (*Message, error) {
	if err != nil {
		return nil, err
	}
	if len(l.Messages) != 1 {
		return nil, errCount("message", len(l.Messages))
	}
	return &Message{Message: l.Messages[0], Users: l.Users}, nil
}

// oneUser returns the only user of a response.
func oneUser(l *chat.UserList, err error) (*chat.User, error) {
	if err != nil {
		return nil, err
	}
	if len(l.Users) != 1 {
		return nil, errCount("user", len(l.Users))
	}
	return &l.Users[0], nil
}
