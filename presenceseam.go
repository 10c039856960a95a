package chat

import "context"

// Online reports which of userIDs have an open event stream. Presence is
// not yet tracked: every user counts as offline (the map is empty).
func (s *Service) Online(ctx context.Context, userIDs []string) (map[string]bool, error) {
	_, _ = ctx, userIDs
	return map[string]bool{}, nil
}
