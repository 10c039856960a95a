package chat

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// wordMatcher finds plain (non-regex) words in lowercased text with one
// Aho-Corasick automaton, so matching costs one pass over the text however
// many words the blacklist holds. Transitions are a dense table over byte
// classes: only bytes that occur in some word get their own class.
type wordMatcher struct {
	classes [256]uint8
	nclass  int
	delta   []int32 // state*nclass + class -> next state
	out     [][]int // state -> pattern indexes ending here (fail-merged)
	words   []string
	exact   []bool
	ruleIDs []string
	patLens []int
}

func newWordMatcher(words []string, exact []bool, ids []string) *wordMatcher {
	m := &wordMatcher{words: words, exact: exact, ruleIDs: ids}
	if len(words) == 0 {
		return m
	}
	used := [256]bool{}
	for _, w := range words {
		for i := 0; i < len(w); i++ {
			used[w[i]] = true
		}
	}
	m.nclass = 1
	for b := 0; b < 256; b++ {
		if used[b] {
			m.classes[b] = uint8(m.nclass)
			m.nclass++
		}
	}
	if m.nclass > 255 {
		// More than 254 distinct bytes cannot happen for the class type;
		// fall back to the identity mapping.
		m.nclass = 256
		for b := 0; b < 256; b++ {
			m.classes[b] = uint8(b)
		}
	}
	nc := m.nclass
	// Build the trie.
	gotoT := []int32{}
	newState := func() int32 {
		gotoT = append(gotoT, make([]int32, nc)...)
		for i := len(gotoT) - nc; i < len(gotoT); i++ {
			gotoT[i] = -1
		}
		m.out = append(m.out, nil)
		return int32(len(m.out) - 1)
	}
	newState()
	m.patLens = make([]int, len(words))
	for pi, w := range words {
		st := int32(0)
		for i := 0; i < len(w); i++ {
			c := int(m.classes[w[i]])
			nx := gotoT[int(st)*nc+c]
			if nx < 0 {
				nx = newState()
				gotoT[int(st)*nc+c] = nx
			}
			st = nx
		}
		m.out[st] = append(m.out[st], pi)
		m.patLens[pi] = len(w)
	}
	// BFS for failure links, filling the DFA.
	fail := make([]int32, len(m.out))
	queue := []int32{}
	for c := 0; c < nc; c++ {
		nx := gotoT[c]
		if nx < 0 {
			gotoT[c] = 0
		} else {
			fail[nx] = 0
			queue = append(queue, nx)
		}
	}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		if f := fail[st]; len(m.out[f]) > 0 {
			m.out[st] = append(m.out[st], m.out[f]...)
		}
		for c := 0; c < nc; c++ {
			nx := gotoT[int(st)*nc+c]
			if nx < 0 {
				gotoT[int(st)*nc+c] = gotoT[int(fail[st])*nc+c]
			} else {
				fail[nx] = gotoT[int(fail[st])*nc+c]
				queue = append(queue, nx)
			}
		}
	}
	m.delta = gotoT
	return m
}

// find returns the index of a word that occurs in lower (respecting
// whole-word rules), or -1.
func (m *wordMatcher) find(lower string) int {
	if len(m.words) == 0 {
		return -1
	}
	nc := m.nclass
	st := int32(0)
	for i := 0; i < len(lower); i++ {
		st = m.delta[int(st)*nc+int(m.classes[lower[i]])]
		if outs := m.out[st]; outs != nil {
			for _, pi := range outs {
				if !m.exact[pi] {
					return pi
				}
				start, end := i+1-m.patLens[pi], i+1
				if wordBoundary(lower, start, end) {
					return pi
				}
			}
		}
	}
	return -1
}

// wordBoundary reports whether s[start:end] stands between Unicode
// non-letter/non-digit runes (or the ends of s).
func wordBoundary(s string, start, end int) bool {
	if start > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:start])
		if isWordRune(r) {
			return false
		}
	}
	if end < len(s) {
		r, _ := utf8.DecodeRuneInString(s[end:])
		if isWordRune(r) {
			return false
		}
	}
	return true
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// isPlainPattern reports whether p has no regular-expression syntax, so it
// can be matched as a literal word.
func isPlainPattern(p string) bool { return regexp.QuoteMeta(p) == p }

// lowerText maps s to its case-folded form: every rune becomes the
// representative of its simple case-folding orbit, the equivalence RE2's
// case-insensitive matching uses (so "Σ", "σ" and "ς" fold alike, as do
// "K", "k" and the Kelvin sign). ASCII letters fold to lower case; s is
// returned without allocating when it is already lower-case ASCII.
func lowerText(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return strings.Map(foldRune, s)
		}
		if c >= 'A' && c <= 'Z' {
			for j := i + 1; j < len(s); j++ {
				if s[j] >= utf8.RuneSelf {
					return strings.Map(foldRune, s)
				}
			}
			return strings.ToLower(s)
		}
	}
	return s
}

// foldRune returns the representative of r's simple case-folding orbit:
// its smallest member, lower-cased when that is an ASCII letter.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < m {
			m = f
		}
	}
	if m >= 'A' && m <= 'Z' {
		m += 'a' - 'A'
	}
	return m
}

// blackRegex is a compiled blacklist regex entry. raw finds candidate
// matches fast: when it can, the pattern is rewritten to match the
// case-folded text (lowerText) case-sensitively, which lets the regexp
// engine skip ahead by the pattern's literal prefix. Whole-word entries
// then check the boundaries of each candidate, and only a candidate that
// fails falls back to the exact (slower) bounded pattern.
type blackRegex struct {
	raw     *regexp.Regexp
	onLower bool
	exact   bool
	bounded *regexp.Regexp
}

// foldedPattern rewrites p, read case-insensitively, into an equivalent
// case-sensitive pattern over case-folded text: literals become their
// folded runes and character classes, which the parser already closes
// under case folding, stay as they are. It reports false for patterns
// whose meaning could change: flag groups (a (?-i) part is case-sensitive
// on purpose) and ASCII word boundaries (\b, \B).
func foldedPattern(p string) (string, bool) {
	if strings.Contains(p, "(?") {
		return "", false
	}
	re, err := syntax.Parse(p, syntax.Perl|syntax.FoldCase)
	if err != nil {
		return "", false
	}
	ok := true
	var walk func(re *syntax.Regexp)
	walk = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
			ok = false
		case syntax.OpLiteral:
			for i, r := range re.Rune {
				re.Rune[i] = foldRune(r)
			}
			re.Flags &^= syntax.FoldCase
		}
		for _, sub := range re.Sub {
			walk(sub)
		}
	}
	walk(re)
	return re.String(), ok
}

func compileBlacklistRegex(p string, exact bool) (*blackRegex, error) {
	if _, err := regexp.Compile(p); err != nil {
		return nil, err
	}
	br := &blackRegex{exact: exact}
	var err error
	if fp, ok := foldedPattern(p); ok {
		if br.raw, err = regexp.Compile(fp); err == nil {
			br.onLower = true
		}
	}
	if !br.onLower {
		if br.raw, err = regexp.Compile(`(?i)(?:` + p + `)`); err != nil {
			return nil, err
		}
	}
	if exact {
		br.bounded, err = regexp.Compile(`(?i)(?:^|[^\p{L}\p{N}\p{Mn}])(?:` + p + `)(?:[^\p{L}\p{N}\p{Mn}]|$)`)
		if err != nil {
			return nil, err
		}
	}
	return br, nil
}

func (br *blackRegex) match(text, lower string) bool {
	s := text
	if br.onLower {
		s = lower
	}
	if !br.exact {
		return br.raw.MatchString(s)
	}
	locs := br.raw.FindAllStringIndex(s, -1)
	if locs == nil {
		return false
	}
	for _, l := range locs {
		if wordBoundary(s, l[0], l[1]) {
			return true
		}
	}
	return br.bounded.MatchString(text)
}

// link is a link found in text.
type link struct {
	raw    string
	scheme string // "" when written without one
	host   string // lowercased, without port
	path   string // starts with "/" or is ""
}

func isHostByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c >= utf8.RuneSelf
}

// linkTrail is the punctuation that ends a sentence rather than a link.
const linkTrail = ".,;:!?)]}'\""

// schemeLinks returns the links written with a scheme (scheme://...),
// whatever their host looks like (an IP address, a name without a dot,
// user information before an @), with the byte spans they cover.
func schemeLinks(s string) ([]link, [][2]int) {
	var out []link
	var spans [][2]int
	from := 0
	for {
		j := strings.Index(s[from:], "://")
		if j < 0 {
			break
		}
		j += from
		from = j + 3
		k := j
		for k > 0 && isSchemeByte(s[k-1]) {
			k--
		}
		for k < j && !(s[k] >= 'a' && s[k] <= 'z' || s[k] >= 'A' && s[k] <= 'Z') {
			k++ // a scheme starts with a letter
		}
		if k == j {
			continue
		}
		end := j + 3
		for end < len(s) && !isSpaceByte(s[end]) {
			end++
		}
		run := strings.TrimRight(s[j+3:end], linkTrail)
		auth, path := run, ""
		if i := strings.IndexAny(run, "/?#"); i >= 0 {
			auth, path = run[:i], run[i:]
		}
		if i := strings.LastIndexByte(auth, '@'); i >= 0 {
			auth = auth[i+1:]
		}
		host := auth
		if strings.HasPrefix(host, "[") {
			if i := strings.IndexByte(host, ']'); i >= 0 {
				host = host[:i+1]
			}
		} else if i := strings.LastIndexByte(host, ':'); i >= 0 {
			host = host[:i]
		}
		host = strings.TrimSuffix(host, ".")
		if host == "" {
			continue
		}
		stop := j + 3 + len(run)
		out = append(out, link{raw: s[k:stop], scheme: strings.ToLower(s[k:j]), host: strings.ToLower(host), path: path})
		spans = append(spans, [2]int{k, stop})
		from = stop
	}
	return out, spans
}

// findLinks returns the links in s: runs like scheme://host/path (any
// host) or host.tld/path where tld is at least two letters. It is a
// hand-written scanner, cheap for text without links.
func findLinks(s string) []link {
	var out []link
	var spans [][2]int
	if strings.Contains(s, "://") {
		out, spans = schemeLinks(s)
	}
	i := 0
	for i < len(s) {
		dot := strings.IndexByte(s[i:], '.')
		if dot < 0 {
			break
		}
		dot += i
		// Spans are sorted and dots come in order: skip spans that end
		// before this dot, then test the next one.
		for len(spans) > 0 && spans[0][1] <= dot {
			spans = spans[1:]
		}
		if len(spans) > 0 && dot >= spans[0][0] {
			i = spans[0][1]
			continue
		}
		// Expand left over host bytes.
		start := dot
		for start > 0 && isHostByte(s[start-1]) {
			start--
		}
		// Expand right over host bytes.
		end := dot + 1
		for end < len(s) && isHostByte(s[end]) {
			end++
		}
		host := strings.Trim(s[start:end], ".-")
		// Recompute end to exclude trailing dots/hyphens.
		hostStart := start + strings.Index(s[start:end], host)
		hostEnd := hostStart + len(host)
		if host == "" || !strings.Contains(host, ".") || !validTLD(host) || hostStart > dot || hostEnd <= dot {
			i = dot + 1
			continue
		}
		l := link{host: strings.ToLower(host)}
		linkStart := hostStart
		if hostStart >= 3 && s[hostStart-3:hostStart] == "://" {
			j := hostStart - 3
			k := j
			for k > 0 && isSchemeByte(s[k-1]) {
				k--
			}
			if k < j {
				l.scheme = strings.ToLower(s[k:j])
				linkStart = k
			}
		}
		if linkStart > 0 && s[linkStart-1] == '@' {
			// An e-mail address, not a link.
			i = hostEnd
			continue
		}
		p := hostEnd
		if p < len(s) && s[p] == ':' {
			q := p + 1
			for q < len(s) && s[q] >= '0' && s[q] <= '9' {
				q++
			}
			if q > p+1 {
				p = q
			}
		}
		if p < len(s) && (s[p] == '/' || s[p] == '?' || s[p] == '#') {
			q := p
			for q < len(s) && !isSpaceByte(s[q]) {
				q++
			}
			path := strings.TrimRight(s[p:q], linkTrail)
			l.path = path
			p += len(path)
		}
		l.raw = s[linkStart:p]
		out = append(out, l)
		i = p
		if i <= dot {
			i = dot + 1
		}
	}
	return out
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '<' || c == '>' || c == '"'
}

// validTLD reports whether the last label of host is at least two letters.
func validTLD(host string) bool {
	i := strings.LastIndexByte(host, '.')
	tld := host[i+1:]
	if len(tld) < 2 {
		return false
	}
	for _, r := range tld {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	// Every label must be non-empty.
	return !strings.Contains(host, "..")
}

// whiteRule is one compiled whitelist entry.
type whiteRule struct {
	id     string
	re     *regexp.Regexp // for regex entries: matched against host+path
	scheme string
	host   string
	path   string
}

// isRegexEntry reports whether a whitelist entry uses regex syntax.
func isRegexEntry(p string) bool { return strings.ContainsAny(p, `*+?()[]{}|^$\`) }

func compileWhiteRule(id string) (*whiteRule, error) {
	w := &whiteRule{id: id}
	if isRegexEntry(id) {
		re, err := regexp.Compile(`(?i)^(?:` + id + `)$`)
		if err != nil {
			return nil, err
		}
		w.re = re
		return w, nil
	}
	e := id
	if i := strings.Index(e, "://"); i >= 0 {
		w.scheme = strings.ToLower(e[:i])
		e = e[i+3:]
	}
	host, path := e, ""
	if i := strings.IndexAny(e, "/?#"); i >= 0 {
		host, path = e[:i], e[i:]
	}
	if j := strings.LastIndexByte(host, ':'); j >= 0 {
		host = host[:j]
	}
	w.host = strings.ToLower(strings.TrimSuffix(host, "."))
	w.path = strings.TrimSuffix(path, "/")
	if w.host == "" {
		return nil, errInvalidEntry
	}
	return w, nil
}

var errInvalidEntry = &Error{Code: CodeInvalidRegex, Message: "whitelist entry has no host"}

func (w *whiteRule) allows(l link) bool {
	if w.re != nil {
		// The whole host, or the host with its path: `.*\.gov` allows
		// every link to a .gov host, `example\.com/pub/.*` only that path.
		return w.re.MatchString(l.host) || l.path != "" && w.re.MatchString(l.host+l.path)
	}
	if w.scheme != "" && l.scheme != "" && w.scheme != l.scheme {
		return false
	}
	if l.host != w.host && !strings.HasSuffix(l.host, "."+w.host) {
		return false
	}
	if w.path == "" {
		return true
	}
	p := l.path
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	return p == w.path || strings.HasPrefix(p, w.path+"/")
}
