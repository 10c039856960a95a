package postgres

import (
	"time"

	chat "github.com/chatengine/chat"
)

// MessageQuery returns the schema-qualified SQL and the arguments that
// QueryMessages runs for f.
func (s *Store) MessageQuery(f chat.MessageFilter) (string, []any) {
	q, args := messageQuery(f)
	return s.stmt(q).sql, args
}

// UnreadQuery returns the schema-qualified SQL and the arguments that
// CountUnread runs for cus.
func (s *Store) UnreadQuery(cus []*chat.ChannelUser) (string, []any) {
	return s.stmt(unreadQuery).sql, unreadArgs(cus)
}

// DBErr exposes the driver error translation.
var DBErr = dbErr

// StatementCount returns how many statements the store's transactions have
// run so far (each one round trip once prepared; BEGIN and COMMIT are not
// counted).
func (s *Store) StatementCount() int64 { return s.statements.Load() }

// WaitPrepared waits until no statement is being prepared in the
// background.
func (s *Store) WaitPrepared() {
	for {
		busy := false
		s.sqlMu.RLock()
		for _, st := range s.sqls {
			st.mu.Lock()
			busy = busy || st.preparing
			st.mu.Unlock()
		}
		s.sqlMu.RUnlock()
		if !busy {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
