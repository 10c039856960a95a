package postgres

import chat "github.com/chatengine/chat"

// ChannelQuery returns the schema-qualified SQL and the arguments that
// QueryChannels runs for f.
func (s *Store) ChannelQuery(f chat.ChannelFilter) (string, []any) {
	q, args := channelQuery(f)
	return s.stmt(q).sql, args
}
