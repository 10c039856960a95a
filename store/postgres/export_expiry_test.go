package postgres

// MuteExpiryQueries returns the schema-qualified SQL of the statements of
// LapsedMutes (with their lock clauses) and NextMuteEnd, by name.
func (s *Store) MuteExpiryQueries() map[string]string {
	const skip = " FOR NO KEY UPDATE SKIP LOCKED"
	return map[string]string{
		"lapsed channels":        s.stmt(lapsedChannelsQuery + skip).sql,
		"lapsed member channels": s.stmt(lapsedMemberChannelsQuery).sql,
		"lapsed members":         s.stmt(lapsedMembersQuery + " FOR NO KEY UPDATE").sql,
		"next mute end":          s.stmt(nextMuteEndQuery).sql,
	}
}
