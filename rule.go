package chat

import (
	"context"
	"regexp"
	"slices"
	"strings"
)

// ruleSet is the compiled blacklist and whitelist at one RulesVersion.
type ruleSet struct {
	version  int64
	words    *wordMatcher
	regexes  []*blackRegex
	regexIDs []string
	white    []*whiteRule
}

// ruleSetTx returns the compiled rules, recompiling when the store's
// RulesVersion moved (another process may have changed them).
func (s *Service) ruleSetTx(ctx context.Context, tx Tx) (*ruleSet, error) {
	v, err := tx.RulesVersion(ctx)
	if err != nil {
		return nil, err
	}
	if rs := s.rules.Load(); rs != nil && rs.version == v {
		return rs, nil
	}
	s.rulesM.Lock()
	defer s.rulesM.Unlock()
	if rs := s.rules.Load(); rs != nil && rs.version == v {
		return rs, nil
	}
	black, err := tx.ListRules(ctx, Blacklist, nil)
	if err != nil {
		return nil, err
	}
	white, err := tx.ListRules(ctx, Whitelist, nil)
	if err != nil {
		return nil, err
	}
	rs := &ruleSet{version: v}
	var words, wids []string
	var exact []bool
	for _, r := range black {
		if isPlainPattern(r.RuleID) {
			words = append(words, lowerText(r.RuleID))
			exact = append(exact, r.IsMatchExactWord)
			wids = append(wids, r.RuleID)
			continue
		}
		re, err := compileBlacklistRegex(r.RuleID, r.IsMatchExactWord)
		if err != nil {
			s.log.Warn("chat: skipping invalid stored blacklist rule", "rule", r.RuleID, "err", err)
			continue
		}
		rs.regexes = append(rs.regexes, re)
		rs.regexIDs = append(rs.regexIDs, r.RuleID)
	}
	rs.words = newWordMatcher(words, exact, wids)
	for _, r := range white {
		w, err := compileWhiteRule(r.RuleID)
		if err != nil {
			s.log.Warn("chat: skipping invalid stored whitelist rule", "rule", r.RuleID, "err", err)
			continue
		}
		rs.white = append(rs.white, w)
	}
	s.rules.Store(rs)
	return rs, nil
}

// blacklisted returns the id of a blacklist rule matching text, or "".
func (rs *ruleSet) blacklisted(text string) string {
	if text == "" {
		return ""
	}
	lower := lowerText(text)
	if i := rs.words.find(lower); i >= 0 {
		return rs.words.ruleIDs[i]
	}
	for i, re := range rs.regexes {
		if re.match(text, lower) {
			return rs.regexIDs[i]
		}
	}
	return ""
}

// disallowedLink returns the first link in text that no whitelist entry
// allows, or "" (always "" when the whitelist is empty).
func (rs *ruleSet) disallowedLink(text string) string {
	if len(rs.white) == 0 || !strings.Contains(text, ".") && !strings.Contains(text, "://") {
		return ""
	}
	for _, l := range findLinks(text) {
		ok := false
		for _, w := range rs.white {
			if w.allows(l) {
				ok = true
				break
			}
		}
		if !ok {
			return l.raw
		}
	}
	return ""
}

// checkTexts applies the blacklist and whitelist to texts for an author
// with the given permissions.
func (rs *ruleSet) checkTexts(texts []string, perms map[string]bool) error {
	for _, t := range texts {
		if !perms[PermExemptFromBlacklist] {
			if id := rs.blacklisted(t); id != "" {
				return &Error{Code: CodeBlacklisted, Message: "text contains a blacklisted word (rule " + quote(id) + ")", Detail: []Detail{RuleRef{RuleID: id}}}
			}
		}
		if !perms[PermExemptFromWhitelist] {
			if l := rs.disallowedLink(t); l != "" {
				return &Error{Code: CodeLinkNotAllowed, Message: "link not allowed by the whitelist: " + quote(l), Detail: []Detail{RefusedLink{URL: l}}}
			}
		}
	}
	return nil
}

func quote(s string) string { return "\"" + s + "\"" }

// RuleList results.

// RuleRecords is the response of the blacklist and whitelist endpoints.
type RuleRecords struct {
	Records []Rule `json:"records"`
}

func (s *Service) validatePattern(list RuleList, field, p string) error {
	if p == "" || len(p) > s.lim.MaxPatternBytes {
		return invalid(field, "must be 1-%d bytes", s.lim.MaxPatternBytes)
	}
	if hasControl(p) {
		return invalid(field, "must not contain control characters")
	}
	if err := checkText(field, p); err != nil {
		return err
	}
	if list == Blacklist {
		if _, err := regexp.Compile(p); err != nil {
			return &Error{Code: CodeInvalidRegex, Message: "invalid regular expression " + quote(p) + ": " + err.Error(), Detail: []Detail{RuleRef{RuleID: p}}}
		}
		return nil
	}
	if _, err := compileWhiteRule(p); err != nil {
		return &Error{Code: CodeInvalidRegex, Message: "invalid whitelist entry " + quote(p) + ": " + err.Error(), Detail: []Detail{RuleRef{RuleID: p}}}
	}
	return nil
}

func (s *Service) checkPatterns(list RuleList, field string, ps []string) error {
	if len(ps) == 0 {
		return invalid(field, "is required")
	}
	if len(ps) > s.lim.MaxIDsPerRequest {
		return invalid(field, "at most %d entries", s.lim.MaxIDsPerRequest)
	}
	for _, p := range ps {
		if err := s.validatePattern(list, field, p); err != nil {
			return err
		}
	}
	return nil
}

// QueryRules returns the records of a list ordered by id; with ids only
// those that exist. Errors: none beyond the store's.
func (s *Service) QueryRules(ctx context.Context, actorID string, list RuleList, ids []string) (*RuleRecords, error) {
	if err := s.allow(ctx, actorID, actRules, ""); err != nil {
		return nil, err
	}
	if err := checkList(list); err != nil {
		return nil, err
	}
	if err := checkTexts("regexs", ids); err != nil {
		return nil, err
	}
	out := &RuleRecords{Records: []Rule{}}
	err := s.view(ctx, func(tx Tx) error {
		rs, err := tx.ListRules(ctx, list, nonEmpty(ids))
		for _, r := range rs {
			out.Records = append(out.Records, *r)
		}
		return err
	})
	return out, err
}

func checkList(list RuleList) error {
	if list != Blacklist && list != Whitelist {
		return invalid("list", "must be blacklist or whitelist")
	}
	return nil
}

// AddRules adds patterns to a list; an existing entry is updated (its
// isMatchExactWord replaced). exact applies to the blacklist only.
// Errors: CodeBadRequest (empty or oversized pattern), CodeInvalidRegex
// (nothing is stored when any pattern is invalid).
func (s *Service) AddRules(ctx context.Context, actorID string, list RuleList, patterns []string, exact bool) (*RuleRecords, error) {
	if err := s.allow(ctx, actorID, actRules, ""); err != nil {
		return nil, err
	}
	if err := checkList(list); err != nil {
		return nil, err
	}
	if err := s.checkPatterns(list, "regexs", patterns); err != nil {
		return nil, err
	}
	if list == Whitelist {
		exact = false
	}
	now := s.Now()
	out := &RuleRecords{Records: []Rule{}}
	seen := map[string]bool{}
	err := s.update(ctx, func(tx Tx, _ *events) error {
		out.Records = out.Records[:0]
		clear(seen)
		al := s.newAudit(now)
		for _, p := range patterns {
			if seen[p] {
				continue
			}
			seen[p] = true
			r := &Rule{List: list, RuleID: p, IsMatchExactWord: exact, CreatedAt: now, UpdatedAt: now}
			if err := tx.PutRule(ctx, r); err != nil {
				return err
			}
			var details map[string]any
			if list == Blacklist {
				details = map[string]any{"isMatchExactWord": exact}
			}
			al.add(actorID, ruleAction(list, "add"), AuditTargetRule, p, "", details)
		}
		if err := al.write(ctx, tx); err != nil {
			return err
		}
		rs, err := tx.ListRules(ctx, list, dedupe(patterns))
		for _, r := range rs {
			out.Records = append(out.Records, *r)
		}
		return err
	})
	clear(seen)
	return out, err
}

// DeleteRules deletes entries by id; absent ids are ignored.
// Errors: CodeBadRequest when ruleIds is empty.
func (s *Service) DeleteRules(ctx context.Context, actorID string, list RuleList, ids []string) error {
	if err := s.allow(ctx, actorID, actRules, ""); err != nil {
		return err
	}
	if err := checkList(list); err != nil {
		return err
	}
	if len(ids) == 0 {
		return invalid("ruleIds", "is required")
	}
	if len(ids) > s.lim.MaxIDsPerRequest {
		return invalid("ruleIds", "at most %d entries", s.lim.MaxIDsPerRequest)
	}
	if err := checkTexts("ruleIds", ids); err != nil {
		return err
	}
	now := s.Now()
	return s.update(ctx, func(tx Tx, _ *events) error {
		if _, err := tx.DeleteRules(ctx, list, ids); err != nil {
			return err
		}
		al := s.newAudit(now)
		for _, id := range dedupe(ids) {
			al.add(actorID, ruleAction(list, "delete"), AuditTargetRule, id, "", nil)
		}
		return al.write(ctx, tx)
	})
}

// UpdateRule renames the entry oldID to newID and sets isMatchExactWord
// (blacklist). Errors: CodeNotFound (oldID absent), CodeConflict (newID
// exists), CodeInvalidRegex, CodeBadRequest.
func (s *Service) UpdateRule(ctx context.Context, actorID string, list RuleList, oldID, newID string, exact bool) (*RuleRecords, error) {
	if err := s.allow(ctx, actorID, actRules, ""); err != nil {
		return nil, err
	}
	if err := checkList(list); err != nil {
		return nil, err
	}
	if oldID == "" {
		return nil, invalid("ruleId", "path ruleId is required")
	}
	if err := checkText("ruleId", oldID); err != nil {
		return nil, err
	}
	if err := s.validatePattern(list, "ruleId", newID); err != nil {
		return nil, err
	}
	if list == Whitelist {
		exact = false
	}
	now := s.Now()
	out := &RuleRecords{}
	err := s.update(ctx, func(tx Tx, _ *events) error {
		r := &Rule{List: list, RuleID: newID, IsMatchExactWord: exact, UpdatedAt: now, CreatedAt: now}
		if err := tx.RenameRule(ctx, list, oldID, r); err != nil {
			if ErrorCode(err) == CodeNotFound {
				return Errorf(CodeNotFound, "%s entry %s not found", list, quote(oldID))
			}
			if ErrorCode(err) == CodeConflict {
				return Errorf(CodeConflict, "%s entry %s already exists", list, quote(newID))
			}
			return err
		}
		details := map[string]any{"oldRuleId": oldID}
		if list == Blacklist {
			details["isMatchExactWord"] = exact
		}
		if err := s.audit(ctx, tx, actorID, ruleAction(list, "update"), AuditTargetRule, newID, "", details); err != nil {
			return err
		}
		rs, err := tx.ListRules(ctx, list, []string{newID})
		out.Records = make([]Rule, 0, len(rs))
		for _, r := range rs {
			out.Records = append(out.Records, *r)
		}
		return err
	})
	return out, err
}

// ruleAction is the audit action of a change to a list: blacklist.add,
// whitelist.delete, ...
func ruleAction(list RuleList, verb string) string { return string(list) + "." + verb }

func nonEmpty(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	return ids
}

// dedupe returns ids without repeats, in the order of their first
// occurrence. While few distinct ids are kept, each id is compared with
// them instead of looked up in a map: a page of 50 messages by a few
// authors costs no map (about 4 KB) and no hash of every id.
func dedupe(ids []string) []string {
	out := make([]string, 0, len(ids))
	var seen map[string]struct{}
	for _, id := range ids {
		if seen == nil {
			if slices.Contains(out, id) {
				continue
			}
			out = append(out, id)
			if len(out) > dedupeScan {
				seen = make(map[string]struct{}, len(ids))
				for _, k := range out {
					seen[k] = struct{}{}
				}
			}
			continue
		}
		if _, ok := seen[id]; ok {
			continue
		}
		seen[id] = struct{}{}
		out = append(out, id)
	}
	return out
}

// dedupeScan is the number of distinct ids beyond which dedupe uses a map.
const dedupeScan = 8

// CheckText applies the blacklist and whitelist to text as they apply to a
// message of an author without exemptions, changing nothing. It returns nil
// when a message with that text would pass, else the error creating it
// would return: CodeBlacklisted (the detail names the rule) or
// CodeLinkNotAllowed (the detail names the link). CheckMessage is the
// fuller dry run (a user's exemptions, a channel's rules), which the admin
// panel's "Test a message" box uses.
func (s *Service) CheckText(ctx context.Context, text string) error {
	var rs *ruleSet
	err := s.view(ctx, func(tx Tx) error {
		var err error
		rs, err = s.ruleSetTx(ctx, tx)
		return err
	})
	if err != nil {
		return err
	}
	return rs.checkTexts([]string{text}, nil)
}
