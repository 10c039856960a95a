package chat

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// checkText refuses text that a store could not keep or compare as sent:
// invalid UTF-8 or a NUL byte. It guards the strings that reach a store
// without checkID's rules (search text, filter tags, rule ids).
func checkText(field, v string) error {
	if !utf8.ValidString(v) {
		return invalid(field, "must be valid UTF-8")
	}
	if strings.IndexByte(v, 0) >= 0 {
		return invalid(field, "must not contain a NUL byte")
	}
	return nil
}

// checkTexts applies checkText to each of vs.
func checkTexts(field string, vs []string) error {
	for _, v := range vs {
		if err := checkText(field, v); err != nil {
			return err
		}
	}
	return nil
}

// checkID validates an id field: 1..MaxIDBytes bytes of UTF-8 without
// control characters.
func (s *Service) checkID(field, id string) error {
	if id == "" {
		return invalid(field, "is required")
	}
	if len(id) > s.lim.MaxIDBytes {
		return invalid(field, "must be at most %d bytes", s.lim.MaxIDBytes)
	}
	if !utf8.ValidString(id) {
		return invalid(field, "must be valid UTF-8")
	}
	if hasControl(id) {
		return invalid(field, "must not contain control characters")
	}
	return nil
}

// checkIDs validates a list of ids and returns them without duplicates.
func (s *Service) checkIDs(field string, ids []string, required bool) ([]string, error) {
	if len(ids) == 0 {
		if required {
			return nil, invalid(field, "is required")
		}
		return nil, nil
	}
	if len(ids) > s.lim.MaxIDsPerRequest {
		return nil, invalid(field, "at most %d ids per request", s.lim.MaxIDsPerRequest)
	}
	for _, id := range ids {
		if err := s.checkID(field, id); err != nil {
			return nil, err
		}
	}
	return dedupe(ids), nil
}

func (s *Service) checkDisplayName(field, v string) error {
	n := utf8.RuneCountInString(v)
	if n == 0 || n > s.lim.MaxDisplayName {
		return invalid(field, "must be 1-%d characters", s.lim.MaxDisplayName)
	}
	if !utf8.ValidString(v) {
		return invalid(field, "must be valid UTF-8")
	}
	if hasControl(v) {
		return invalid(field, "must not contain control characters")
	}
	return nil
}

func (s *Service) checkTags(field string, tags []string) ([]string, error) {
	if len(tags) > s.lim.MaxTags {
		return nil, invalid(field, "at most %d tags", s.lim.MaxTags)
	}
	for _, t := range tags {
		n := utf8.RuneCountInString(t)
		if n == 0 || n > s.lim.MaxTagChars {
			return nil, invalid(field, "each tag must be 1-%d characters", s.lim.MaxTagChars)
		}
		if !utf8.ValidString(t) || hasControl(t) {
			return nil, invalid(field, "tags must be valid UTF-8 without control characters")
		}
	}
	out := dedupe(tags)
	return out, nil
}

// checkNewTags validates the tags of an update: nil (unchanged) stays nil;
// otherwise the checked tags, never nil.
func (s *Service) checkNewTags(tags *[]string) ([]string, error) {
	if tags == nil {
		return nil, nil
	}
	out, err := s.checkTags("tags", *tags)
	return emptyIfNil(out), err
}

// checkFilterTags validates tags used as a query filter (the count bound is
// the id bound).
func (s *Service) checkFilterTags(field string, tags []string) error {
	if len(tags) > s.lim.MaxIDsPerRequest {
		return invalid(field, "at most %d tags", s.lim.MaxIDsPerRequest)
	}
	for _, t := range tags {
		if t == "" || len(t) > 4*s.lim.MaxTagChars {
			return invalid(field, "each tag must be 1-%d characters", s.lim.MaxTagChars)
		}
	}
	return checkTexts(field, tags)
}

func (s *Service) checkObject(field string, v map[string]any, max int) error {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return invalid(field, "must be a JSON object")
	}
	if len(b) > max {
		return invalid(field, "must be at most %d bytes of JSON", max)
	}
	return nil
}

// emptyIfNil returns a non-nil slice.
func emptyIfNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

func emptyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
