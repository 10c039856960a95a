package chat

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"hash"
	"strings"
	"time"
)

// Paging carries the tokens of the next and previous pages; a key is
// absent at that end.
type Paging struct {
	Next     string `json:"next,omitempty"`
	Previous string `json:"previous,omitempty"`
}

// pageToken is the signed content of a paging token. Q binds the token to
// the query that made it (a hash of its filter fields), K names the kind of
// listing, D the direction ("n" next, "p" previous) and the rest is the
// keyset position.
type pageToken struct {
	K  string `json:"k"`
	Q  string `json:"q"`
	D  string `json:"d"`
	T  int64  `json:"t,omitempty"` // time in unix ms
	ID string `json:"i,omitempty"` // id tie-breaker
	S  int64  `json:"s,omitempty"` // segment
	L  int    `json:"l,omitempty"` // page size of the original query
}

// queryHash returns a short hash of the query's filter fields.
func queryHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

func joinList(v []string) string { return strings.Join(v, "\x1f") }

func (s *Service) encodeToken(t pageToken) string {
	body, _ := json.Marshal(t)
	var sum [sha256.Size]byte
	s.tokenMAC(body, &sum)
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(sum[:16])
}

// tokenMAC writes the HMAC-SHA256 of a token's body under the paging key to
// sum. The HMACs are pooled: a reset HMAC restores its keyed state instead
// of hashing the key again.
func (s *Service) tokenMAC(body []byte, sum *[sha256.Size]byte) {
	mac, _ := s.pmacs.Get().(hash.Hash)
	if mac == nil {
		mac = hmac.New(sha256.New, s.pkey)
	}
	mac.Reset()
	mac.Write(body)
	mac.Sum(sum[:0])
	s.pmacs.Put(mac)
}

// decodeToken verifies and decodes a token made for the same kind and
// query. A forged, altered or foreign token is CodeBadRequest.
func (s *Service) decodeToken(field, tok, kind, q string) (*pageToken, error) {
	bad := invalid(field, "invalid or expired paging token")
	// The largest token holds a 256-byte id whose every byte JSON escapes
	// to six (\u003c): about 2.2 KB once encoded.
	if len(tok) > 4096 {
		return nil, bad
	}
	i := strings.IndexByte(tok, '.')
	if i < 0 {
		return nil, bad
	}
	body, err1 := base64.RawURLEncoding.DecodeString(tok[:i])
	sum, err2 := base64.RawURLEncoding.DecodeString(tok[i+1:])
	if err1 != nil || err2 != nil {
		return nil, bad
	}
	var want [sha256.Size]byte
	s.tokenMAC(body, &want)
	if !hmac.Equal(want[:16], sum) {
		return nil, bad
	}
	var t pageToken
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, bad
	}
	if t.K != kind || t.Q != q || (t.D != "n" && t.D != "p") {
		return nil, invalid(field, "paging token belongs to another query")
	}
	return &t, nil
}

// openPage decodes token, when given, for a listing of kind and query hash
// qh. It returns the token (nil without one) and the page size: limit, or
// the token's own when the query set none (qLimit 0).
func (s *Service) openPage(field, token, kind, qh string, qLimit, limit int) (*pageToken, int, error) {
	if token == "" {
		return nil, limit, nil
	}
	tok, err := s.decodeToken(field, token, kind, qh)
	if err != nil {
		return nil, 0, err
	}
	if qLimit == 0 && tok.L > 0 && tok.L <= s.lim.MaxPage {
		limit = tok.L
	}
	return tok, limit, nil
}

// at returns the time of the token's position.
func (t *pageToken) at() time.Time { return time.UnixMilli(t.T).UTC() }

// place returns cur as the after cursor of a next-page token, else as the
// before cursor.
func place[C any](tok *pageToken, cur *C) (after, before *C) {
	if tok.D == "n" {
		return cur, nil
	}
	return nil, cur
}

// setLinks sets p's tokens for a page read with tok (nil on the first
// page) that found rows past its end when more: Next from last, Previous
// from first (both without a direction).
func (s *Service) setLinks(p *Paging, tok *pageToken, more bool, first, last pageToken) {
	if (tok == nil || tok.D == "n") && more || tok != nil && tok.D == "p" {
		last.D = "n"
		p.Next = s.encodeToken(last)
	}
	if tok != nil && (tok.D == "n" || more) {
		first.D = "p"
		p.Previous = s.encodeToken(first)
	}
}

func (s *Service) pageSize(field string, limit, def int) (int, error) {
	if limit < 0 {
		return 0, invalid(field, "must not be negative")
	}
	if limit == 0 {
		return def, nil
	}
	if limit > s.lim.MaxPage {
		return 0, invalid(field, "must be at most %d", s.lim.MaxPage)
	}
	return limit, nil
}
