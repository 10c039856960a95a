package postgres

import (
	"time"

	chat "github.com/chatengine/chat"
)

// AuditQuery returns the schema-qualified SQL and the arguments that
// QueryAudit runs for f.
func (s *Store) AuditQuery(f chat.AuditFilter) (string, []any) {
	q, args := auditQuery(f)
	return s.stmt(q).sql, args
}

// PurgeQuery returns the schema-qualified SQL and the arguments that
// SoftDeleteBatch runs for f.
func (s *Store) PurgeQuery(f chat.PurgeFilter, now time.Time) (string, []any) {
	return s.stmt(purgeQuery).sql, purgeArgs(f, now)
}
