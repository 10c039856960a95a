package postgres

import (
	"context"
	"time"

	chat "github.com/chatengine/chat"
)

// MessageQuery returns the schema-qualified SQL and the arguments that
// QueryMessages runs for f.
func (s *Store) MessageQuery(f chat.MessageFilter) (string, []any) {
	q, args := messageQuery(f)
	return s.stmt(q).sql, args
}

// DBErr exposes the driver error translation.
var DBErr = dbErr

// UpdateLocking runs fn once the way Update runs it after a conflict:
// reads by id lock their rows.
func (s *Store) UpdateLocking(ctx context.Context, fn func(chat.Tx) error) error {
	err, _ := s.run(ctx, false, true, fn)
	return err
}

// SetLaneIdle changes how long the write lane keeps idle connections; call
// it before the first Update.
func (s *Store) SetLaneIdle(d time.Duration) { s.lane.after = d }

// LaneConns returns the bound of the write lane's connections.
func (s *Store) LaneConns() int { return s.lane.max }
