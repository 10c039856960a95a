package chat

import (
	"context"
	"unicode/utf8"
)

// RoleList is the response of the roles endpoints.
type RoleList struct {
	Roles []Role `json:"roles"`
}

// QueryRoles lists roles ordered by id; filter keeps those whose id
// contains it (case-insensitive). Errors: CodeBadRequest.
func (s *Service) QueryRoles(ctx context.Context, actorID, filter string) (*RoleList, error) {
	if err := s.allow(ctx, actorID, actRoles, ""); err != nil {
		return nil, err
	}
	if len(filter) > s.lim.MaxIDBytes {
		return nil, invalid("filter", "must be at most %d bytes", s.lim.MaxIDBytes)
	}
	out := &RoleList{Roles: []Role{}}
	err := s.view(ctx, func(tx Tx) error {
		rs, err := tx.ListRoles(ctx, filter)
		for _, r := range rs {
			r.Permissions = emptyIfNil(r.Permissions)
			out.Roles = append(out.Roles, *r)
		}
		return err
	})
	return out, err
}

// PutRoles creates or replaces the roles named by publicIDs, each with the
// given permissions (replacing the old ones). Errors: CodeBadRequest
// (missing or invalid ids or permissions), CodePermissionDenied (the
// built-in global-admin role cannot be changed).
func (s *Service) PutRoles(ctx context.Context, actorID string, publicIDs, permissions []string) (*RoleList, error) {
	if err := s.allow(ctx, actorID, actRoles, ""); err != nil {
		return nil, err
	}
	ids, err := s.checkIDs("publicIds", publicIDs, true)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if id == RoleGlobalAdmin {
			return nil, Errorf(CodePermissionDenied, "publicIds: the built-in role %s cannot be changed", RoleGlobalAdmin)
		}
	}
	if permissions == nil {
		return nil, invalid("permissions", "is required (send an empty list for none)")
	}
	if len(permissions) > s.lim.MaxIDsPerRequest {
		return nil, invalid("permissions", "at most %d entries", s.lim.MaxIDsPerRequest)
	}
	for _, p := range permissions {
		n := utf8.RuneCountInString(p)
		if n == 0 || n > s.lim.MaxPermissionChars || hasControl(p) || !utf8.ValidString(p) {
			return nil, invalid("permissions", "each permission must be 1-%d characters without control characters", s.lim.MaxPermissionChars)
		}
	}
	perms := dedupe(permissions)
	now := s.Now()
	out := &RoleList{}
	err = s.update(ctx, func(tx Tx, _ *events) error {
		al := s.newAudit(now)
		for _, id := range ids {
			if err := tx.PutRole(ctx, &Role{RoleID: id, Permissions: perms, CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
			al.add(actorID, AuditRolePut, AuditTargetRole, id, "", map[string]any{"permissions": stringsAny(perms)})
		}
		if err := al.write(ctx, tx); err != nil {
			return err
		}
		rs, err := tx.GetRoles(ctx, ids)
		out.Roles = make([]Role, 0, len(rs))
		for _, r := range rs {
			r.Permissions = emptyIfNil(r.Permissions)
			out.Roles = append(out.Roles, *r)
		}
		return err
	})
	return out, err
}

// ensureBuiltins creates the built-in global-admin role when missing.
func (s *Service) ensureBuiltins(ctx context.Context) error {
	now := s.Now()
	return s.store.Update(ctx, func(tx Tx) error {
		rs, err := tx.GetRoles(ctx, []string{RoleGlobalAdmin})
		if err != nil || len(rs) > 0 {
			return err
		}
		return tx.PutRole(ctx, &Role{RoleID: RoleGlobalAdmin, Permissions: []string{}, CreatedAt: now, UpdatedAt: now})
	})
}
