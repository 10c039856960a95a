package postgres

import chat "github.com/chatengine/chat"

// MessageQuery returns the schema-qualified SQL and the arguments that
// QueryMessages runs for f.
func (s *Store) MessageQuery(f chat.MessageFilter) (string, []any) {
	q, args := messageQuery(f)
	return s.stmt(q).sql, args
}

// UnreadQuery returns the schema-qualified SQL and the arguments that
// UnreadCounts runs for cus.
func (s *Store) UnreadQuery(cus []*chat.ChannelUser) (string, []any) {
	return s.stmt(unreadQuery).sql, unreadArgs(cus)
}

// DBErr exposes the driver error translation.
var DBErr = dbErr

// StatementCount returns how many statements the store's transactions have
// run so far (each one round trip once prepared; BEGIN and COMMIT are not
// counted).
func (s *Store) StatementCount() int64 { return s.statements.Load() }

// WaitPrepared waits until the background prepares started so far are
// done.
func (s *Store) WaitPrepared() { s.bgWG.Wait() }
