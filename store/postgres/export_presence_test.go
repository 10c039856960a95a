package postgres

// PresenceQueries returns the schema-qualified SQL of the statements of
// LivePresence and LapsedPresence (with its lock clause), by name.
func (s *Store) PresenceQueries() map[string]string {
	return map[string]string{
		"live presence":   s.stmt(livePresenceQuery).sql,
		"lapsed presence": s.stmt(lapsedPresenceQuery + " FOR NO KEY UPDATE SKIP LOCKED").sql,
	}
}
