package chat

// messageMentions returns the ids of the users m mentions. Mentions are
// not yet recorded on messages, so it returns none.
func messageMentions(m *Message) []string {
	_ = m
	return nil
}
