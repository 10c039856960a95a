package postgres

// ChurnQueries returns the schema-qualified SQL of the statements that
// read and delete the tables written and emptied all the time
// (events_pending, push_batches), by name.
func (s *Store) ChurnQueries() map[string]string {
	return map[string]string{
		"relay pass":          s.stmt(relayMoveSQL).sql,
		"relay poll":          s.stmt(relayPendingSQL).sql,
		"expand push batches": s.stmt(expandPushBatchesSQL).sql,
	}
}
