package httpapi

import (
	"encoding/json"
	"unicode/utf8"
)

// parseObject is the fast path of decodeJSON: it decodes a JSON object
// into the value tree that encoding/json's Decoder with UseNumber makes
// (map[string]any, []any, string, json.Number, bool, nil), in one pass and
// without the Decoder's buffering. It reports ok false for anything it does
// not accept (a syntax error, a value that is not an object, data after
// the object, nesting deeper than encoding/json allows); decodeJSON then
// runs encoding/json itself, which gives the same tree or the error.
func parseObject(b []byte) (m map[string]any, ok bool) {
	p := jsonParser{b: b}
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return nil, false
	}
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	if p.i != len(p.b) {
		return nil, false
	}
	return v.(map[string]any), true
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

type jsonParser struct {
	b []byte
	i int
}

func (p *jsonParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// sep reads what follows a member or element: ',' (more follow, done
// false) or the closing byte (done true); anything else is not ok.
func (p *jsonParser) sep(closing byte) (done, ok bool) {
	p.space()
	if p.i >= len(p.b) {
		return false, false
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		return false, true
	case closing:
		p.i++
		return true, true
	}
	return false, false
}

func (p *jsonParser) literal(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

func (p *jsonParser) value(depth int) (any, bool) {
	if p.i >= len(p.b) {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		if depth >= maxJSONDepth {
			return nil, false
		}
		p.i++
		m := map[string]any{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return m, true
		}
		for {
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return nil, false
			}
			k, ok := p.str()
			if !ok {
				return nil, false
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, false
			}
			p.i++
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			if done, ok := p.sep('}'); !ok {
				return nil, false
			} else if done {
				return m, true
			}
		}
	case c == '[':
		if depth >= maxJSONDepth {
			return nil, false
		}
		p.i++
		a := []any{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return a, true
		}
		for {
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			if done, ok := p.sep(']'); !ok {
				return nil, false
			} else if done {
				return a, true
			}
		}
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	}
	return nil, false
}

// str reads a string token. Strings with escapes or non-ASCII bytes are
// unquoted by encoding/json (which replaces invalid UTF-8 and unpaired
// surrogates with U+FFFD).
func (p *jsonParser) str() (string, bool) {
	start := p.i
	p.i++ // the opening quote
	simple := true
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			if simple {
				return string(p.b[start+1 : p.i-1]), true
			}
			var s string
			if json.Unmarshal(p.b[start:p.i], &s) != nil {
				return "", false
			}
			return s, true
		case c == '\\':
			simple = false
			p.i += 2
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			simple = false
			p.i++
		default:
			p.i++
		}
	}
	return "", false
}

// number reads a number token as json.Number, checking JSON's grammar.
func (p *jsonParser) number() (any, bool) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return json.Number(p.b[start:p.i]), true
}
