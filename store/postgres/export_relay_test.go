package postgres

// batchDeletes are the statements that delete rows in batches, by name:
// those that empty the tables written and emptied all the time
// (events_pending, push_batches, and the relay's poll of events_pending)
// and the retention deletes (events, stream_tickets, pushes).
var batchDeletes = map[string]string{
	"relay pass":             relayMoveSQL,
	"relay poll":             relayPendingSQL,
	"expand push batches":    expandPushBatchesSQL,
	"delete old events":      deleteEventsSQL,
	"delete expired tickets": deleteTicketsSQL,
	"delete finished pushes": deleteFinishedPushesSQL,
}

// BatchDeleteQueries returns the schema-qualified SQL of batchDeletes.
func (s *Store) BatchDeleteQueries() map[string]string {
	out := map[string]string{}
	for name, tmpl := range batchDeletes {
		out[name] = s.stmt(tmpl).sql
	}
	return out
}

// PlannedEachRun reports whether the batch delete of that name runs
// without a prepared statement, planned at each run.
func PlannedEachRun(name string) bool { return plannedEachRun[batchDeletes[name]] }
