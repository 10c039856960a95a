package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	chat "github.com/chatengine/chat"
)

// This file is the one request decoder of the package. Every request, JSON,
// form or query string, becomes a value tree of plain Go values:
//
//	map[string]any  an object
//	[]any           an array
//	string          a JSON string
//	json.Number     a JSON number
//	bool            a JSON boolean
//	nil             a JSON null (treated as absent)
//	formValue       a scalar from a form body or a query string, whose type
//	                is decided by the accessor that reads it
//
// Handlers read fields through the typed accessors of params, which report
// the first type error as a 400000 naming the field.

// formValue is a scalar that came from a form body or a query string.
type formValue string

// maxDepth bounds how deep a field's value may nest: the brackets of a
// form key (a[b][c]...) and the objects and arrays of a JSON value alike.
const maxDepth = 32

// badRequest returns a 400000 error naming field, with the field in the
// detail as the Service does.
func badRequest(field, format string, args ...any) *chat.Error {
	return &chat.Error{
		Code:    chat.CodeBadRequest,
		Message: field + ": " + fmt.Sprintf(format, args...),
		Detail:  []chat.Detail{chat.FieldError{Field: field}},
	}
}

// decodeRequest reads the parameters of a request that is not an upload:
// the JSON or form body of every method, and for GET and DELETE the query
// string too (body fields win over query fields of the same name). The body
// is bounded by limit bytes (413 with 400413 beyond it).
func decodeRequest(w http.ResponseWriter, r *http.Request, limit int64) (*params, error) {
	var v map[string]any
	if r.Method == http.MethodGet || r.Method == http.MethodDelete {
		q, err := decodeForm(r.URL.RawQuery, "query string")
		if err != nil {
			return nil, err
		}
		v = q
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Body != nil && r.Body != http.NoBody {
		if err := checkEncoding(r); err != nil {
			return nil, err
		}
		b, err := readBody(w, r, limit)
		if err != nil {
			return nil, err
		}
		body, err := decodeBody(r.Header.Get("Content-Type"), b)
		if err != nil {
			return nil, err
		}
		if v == nil {
			v = body // no query string: the body's tree is the parameters
		} else {
			for k, x := range body {
				v[k] = x
			}
		}
	}
	if v == nil {
		v = map[string]any{}
	}
	return newParams(v), nil
}

// checkEncoding refuses a body sent with a content coding (gzip, deflate,
// ...): the API reads bodies as they are sent, so a compressed body would
// otherwise fail as invalid JSON or form data with a confusing message.
// 415 with 400415, as RFC 9110 section 15.5.16 suggests.
func checkEncoding(r *http.Request) error {
	for _, v := range r.Header.Values("Content-Encoding") {
		for _, c := range strings.Split(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return chat.Errorf(chat.CodeUnsupportedMedia, "Content-Encoding %s is not supported: send the body uncompressed", c)
			}
		}
	}
	return nil
}

// readBody reads the whole body, at most limit bytes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	var b []byte
	var err error
	if n := r.ContentLength; n > 0 {
		// The length is known and within the limit, and net/http never
		// delivers more than it: read into a buffer of that size.
		b = make([]byte, n)
		var m int
		m, err = io.ReadFull(r.Body, b)
		b = b[:m]
	} else {
		b, err = io.ReadAll(http.MaxBytesReader(serverWriter(r, w), r.Body, limit))
	}
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge(limit)
		}
		return nil, &chat.Error{Code: chat.CodeBadRequest, Message: "body: could not be read", Err: err}
	}
	return b, nil
}

func tooLarge(limit int64) *chat.Error {
	return chat.Errorf(chat.CodeTooLarge, "request body is larger than %d bytes", limit)
}

// decodeBody decodes a JSON or form body by its content type. JSON is
// application/json (or any +json type), or a body without a content type
// or labelled application/x-www-form-urlencoded that starts with '{'. Form
// is any other body without a content type or labelled
// application/x-www-form-urlencoded. Any other content type is 415 with
// 400415.
func decodeBody(contentType string, b []byte) (map[string]any, error) {
	mt := ""
	switch contentType {
	case "", "application/json", "application/x-www-form-urlencoded":
		mt = contentType // the common values, without parsing
	default:
		var err error
		if mt, _, err = mime.ParseMediaType(contentType); err != nil {
			return nil, chat.Errorf(chat.CodeUnsupportedMedia, "Content-Type %q cannot be parsed: send application/json or application/x-www-form-urlencoded", contentType)
		}
	}
	trimmed := bytes.TrimLeft(b, " \t\r\n")
	switch {
	case len(trimmed) == 0:
		return map[string]any{}, nil
	case mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		((mt == "" || mt == "application/x-www-form-urlencoded") && trimmed[0] == '{'):
		// A form body never starts with '{' (its keys are field names),
		// while JSON labelled as a form is common: curl -d '{...}' sends
		// application/x-www-form-urlencoded unless told otherwise.
		return decodeJSON(b)
	case mt == "application/x-www-form-urlencoded" || mt == "":
		return decodeForm(string(b), "body")
	}
	return nil, chat.Errorf(chat.CodeUnsupportedMedia, "Content-Type %s is not supported: send application/json or application/x-www-form-urlencoded", mt)
}

// decodeJSON decodes a JSON body object, keeping numbers as json.Number,
// and checks its content with checkJSON.
func decodeJSON(b []byte) (map[string]any, error) {
	m, err := parseJSON(b, "body")
	if err != nil {
		return nil, err
	}
	if err := checkJSON(b, m, ""); err != nil {
		return nil, err
	}
	return m, nil
}

// parseJSON decodes a JSON object with encoding/json, keeping numbers as
// json.Number; where names the source in errors.
func parseJSON(b []byte, where string) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, badRequest(where, "invalid JSON: %s", jsonErrorText(err))
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badRequest(where, "must be a JSON object")
	}
	if len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) != 0 {
		return nil, badRequest(where, "invalid JSON: unexpected data after the object")
	}
	return m, nil
}

// jsonErrorText describes a JSON syntax error without Go type names.
func jsonErrorText(err error) string {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "unexpected end of input"
	}
	return "malformed"
}

// formNode collects the values of one form key path before it becomes a
// value: plain values (key=v), object members (key[name]=v), indexed
// elements (key[0]=v) and appended elements (key[]=v).
type formNode struct {
	vals    []string
	keys    map[string]*formNode
	korder  []string
	indexed map[int64]*formNode
	app     []*formNode
}

func (n *formNode) key(k string) *formNode {
	if n.keys == nil {
		n.keys = map[string]*formNode{}
	}
	c := n.keys[k]
	if c == nil {
		c = &formNode{}
		n.keys[k] = c
		n.korder = append(n.korder, k)
	}
	return c
}

func (n *formNode) index(i int64) *formNode {
	if n.indexed == nil {
		n.indexed = map[int64]*formNode{}
	}
	c := n.indexed[i]
	if c == nil {
		c = &formNode{}
		n.indexed[i] = c
	}
	return c
}

// decodeForm turns a URL-encoded form or query string into a value tree.
// Arrays may be repeated keys (a=1&a=2), a[]=1, a[0]=1 or one JSON array
// string; objects may be brackets (o[k]=1, o[k][j]=1) or one JSON object
// string (decided by the accessor). where names the source in errors.
func decodeForm(raw, where string) (map[string]any, error) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return nil, badRequest(where, "malformed URL encoding")
	}
	return decodeValues(vals, where)
}

// decodeValues turns form values (of a form body, a query string or the
// fields of a multipart upload) into a value tree. Names and values must be
// valid UTF-8 without NUL bytes; where names the source in errors about
// names.
func decodeValues(vals url.Values, where string) (map[string]any, error) {
	root := &formNode{}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if msg := badText(k); msg != "" {
			return nil, badRequest(where, "parameter names %s", msg)
		}
		for _, v := range vals[k] {
			if err := checkText(k, v); err != nil {
				return nil, err
			}
		}
	}
	for _, k := range keys {
		name, path, ok := splitFormKey(k)
		if !ok {
			name, path = k, nil
		}
		if len(path) > maxDepth {
			return nil, badRequest(name, "nested more than %d levels deep", maxDepth)
		}
		for _, v := range vals[k] {
			n := root.key(name)
			for _, seg := range path {
				switch {
				case seg == "":
					c := &formNode{}
					n.app = append(n.app, c)
					n = c
				case isIndex(seg):
					i, _ := strconv.ParseInt(seg, 10, 64)
					n = n.index(i)
				default:
					n = n.key(seg)
				}
			}
			n.vals = append(n.vals, v)
		}
	}
	out := make(map[string]any, len(root.korder))
	for _, k := range root.korder {
		v, err := root.keys[k].value(k)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// splitFormKey splits "a[b][]" into "a" and ["b", ""]. ok is false when
// the key has no well-formed bracket suffix (then it is a literal name).
func splitFormKey(k string) (name string, path []string, ok bool) {
	i := strings.IndexByte(k, '[')
	if i <= 0 {
		return k, nil, i < 0
	}
	name, rest := k[:i], k[i:]
	for rest != "" {
		if rest[0] != '[' {
			return "", nil, false
		}
		j := strings.IndexByte(rest, ']')
		if j < 0 {
			return "", nil, false
		}
		path = append(path, rest[1:j])
		rest = rest[j+1:]
	}
	return name, path, true
}

func isIndex(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// value turns a collected node into a value; field names it in errors.
func (n *formNode) value(field string) (any, error) {
	if len(n.keys) > 0 {
		if len(n.vals) > 0 || len(n.indexed) > 0 || len(n.app) > 0 {
			return nil, badRequest(field, "mixes an object (%s[name]) with other values", field)
		}
		m := make(map[string]any, len(n.keys))
		for _, k := range n.korder {
			v, err := n.keys[k].value(field + "." + k)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	}
	if len(n.indexed) == 0 && len(n.app) == 0 {
		if len(n.vals) == 1 {
			return formValue(n.vals[0]), nil
		}
		arr := make([]any, len(n.vals))
		for i, v := range n.vals {
			arr[i] = formValue(v)
		}
		return arr, nil
	}
	arr := make([]any, 0, len(n.vals)+len(n.indexed)+len(n.app))
	for _, v := range n.vals {
		arr = append(arr, formValue(v))
	}
	idx := make([]int64, 0, len(n.indexed))
	for i := range n.indexed {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	children := make([]*formNode, 0, len(idx)+len(n.app))
	for _, i := range idx {
		children = append(children, n.indexed[i])
	}
	children = append(children, n.app...)
	for i, c := range children {
		v, err := c.value(fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
	}
	return arr, nil
}

// params reads typed fields from a value tree. The first error is kept
// (later accessors return zero values) and reported by Err; nested
// objects share it.
type params struct {
	v      map[string]any
	prefix string
	err    *error
}

func newParams(v map[string]any) *params {
	var err error
	return &params{v: v, err: &err}
}

// Err returns the first error an accessor met.
func (p *params) Err() error { return *p.err }

func (p *params) fail(e *chat.Error) {
	if *p.err == nil {
		*p.err = e
	}
}

func (p *params) field(name string) string { return p.prefix + name }

// get returns the value of name; nil when absent or null.
func (p *params) get(name string) any {
	if *p.err != nil {
		return nil
	}
	return p.v[name]
}

// has reports whether name is present and not null.
func (p *params) has(name string) bool { return p.get(name) != nil }

// str reads a string ("" when absent).
func (p *params) str(name string) string {
	switch x := p.get(name).(type) {
	case nil:
		return ""
	case string:
		return x
	case formValue:
		return string(x)
	}
	p.fail(badRequest(p.field(name), "must be a string"))
	return ""
}

// strPtr reads an optional string: nil when absent.
func (p *params) strPtr(name string) *string {
	if !p.has(name) {
		return nil
	}
	s := p.str(name)
	return &s
}

// strs reads an array of strings (nil when absent). A form field with one
// empty value is an empty array; a form value that is a JSON array is
// decoded; any other single form value is an array of one.
func (p *params) strs(name string) []string {
	v := p.get(name)
	if fv, ok := v.(formValue); ok {
		s := string(fv)
		switch {
		case s == "":
			return []string{}
		case s[0] == '[':
			var arr []any
			if json.Unmarshal([]byte(s), &arr) == nil {
				if err := checkSurrogates([]byte(s), arr, p.field(name)); err != nil {
					p.fail(err)
					return nil
				}
				if err := checkValue(arr, p.field(name), p.field(name), 0); err != nil {
					p.fail(err)
					return nil
				}
				v = arr
				break
			}
			return []string{s}
		default:
			return []string{s}
		}
	}
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			switch s := e.(type) {
			case string:
				out = append(out, s)
			case formValue:
				out = append(out, string(s))
			default:
				p.fail(badRequest(p.field(name), "must be an array of strings"))
				return nil
			}
		}
		return out
	}
	p.fail(badRequest(p.field(name), "must be an array of strings"))
	return nil
}

// strsPtr reads an optional array of strings: nil when absent.
func (p *params) strsPtr(name string) *[]string {
	if !p.has(name) {
		return nil
	}
	s := p.strs(name)
	if s == nil {
		s = []string{}
	}
	return &s
}

// int64Ptr reads an optional integer: nil when absent (or an empty form
// value). Decimal strings are accepted from forms only; JSON needs a number.
func (p *params) int64Ptr(name string) *int64 {
	var s string
	fromJSON := false
	switch x := p.get(name).(type) {
	case nil:
		return nil
	case json.Number:
		s, fromJSON = string(x), true
	case formValue:
		if x == "" {
			return nil
		}
		s = strings.TrimSpace(string(x))
	default:
		p.fail(badRequest(p.field(name), "must be an integer"))
		return nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return &n
	} else if ne, ok := errors.AsType[*strconv.NumError](err); ok && ne.Err == strconv.ErrRange {
		p.fail(badRequest(p.field(name), "is out of range"))
		return nil
	}
	// JSON numbers such as 10.0 or 1e2 are integers too; forms take
	// decimal integers only.
	f, err := strconv.ParseFloat(s, 64)
	if !fromJSON || err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
		p.fail(badRequest(p.field(name), "must be an integer"))
		return nil
	}
	if f < -(1<<63) || f >= 1<<63 {
		p.fail(badRequest(p.field(name), "is out of range"))
		return nil
	}
	n := int64(f)
	return &n
}

// maxInt bounds the integers read by integer (page sizes, offsets).
const maxInt = 1 << 30

// integer reads an integer within ±2^30 (0 when absent).
func (p *params) integer(name string) int {
	n := p.int64Ptr(name)
	if n == nil {
		return 0
	}
	if *n > maxInt || *n < -maxInt {
		p.fail(badRequest(p.field(name), "is out of range"))
		return 0
	}
	return int(*n)
}

// int64 reads an integer (0 when absent).
func (p *params) int64(name string) int64 {
	if n := p.int64Ptr(name); n != nil {
		return *n
	}
	return 0
}

// boolean reads a boolean (false when absent): JSON true/false, or from
// forms true/false/1/0 (case-insensitive) and an empty value as absent.
func (p *params) boolean(name string) bool {
	switch x := p.get(name).(type) {
	case nil:
		return false
	case bool:
		return x
	case formValue:
		switch strings.ToLower(strings.TrimSpace(string(x))) {
		case "true", "1":
			return true
		case "false", "0", "":
			return false
		}
	}
	p.fail(badRequest(p.field(name), "must be a boolean (true or false)"))
	return false
}

// objectValue returns the object under name as a tree (nil when absent). A
// form value holding a JSON object is decoded.
func (p *params) objectValue(name string) map[string]any {
	switch x := p.get(name).(type) {
	case nil:
		return nil
	case map[string]any:
		return x
	case formValue:
		if x == "" {
			return nil
		}
		if x[0] == '{' {
			b := []byte(x)
			if m, err := parseJSON(b, p.field(name)); err == nil {
				if err := checkJSON(b, m, p.field(name)); err != nil {
					p.fail(err)
					return nil
				}
				return m
			}
		}
	}
	p.fail(badRequest(p.field(name), "must be an object"))
	return nil
}

// object reads an object as plain JSON values (nil when absent): form
// values become strings, numbers float64.
func (p *params) object(name string) map[string]any {
	m := p.objectValue(name)
	if m == nil {
		return nil
	}
	return plain(m).(map[string]any)
}

// objectPtr reads an optional object: nil when absent.
func (p *params) objectPtr(name string) *map[string]any {
	if !p.has(name) {
		return nil
	}
	m := p.object(name)
	if m == nil {
		if *p.err != nil {
			return nil
		}
		m = map[string]any{}
	}
	return &m
}

// sub returns the params of a nested object (empty when absent); its
// fields are named "name.field" in errors.
func (p *params) sub(name string) *params {
	m := p.objectValue(name)
	if m == nil {
		m = map[string]any{}
	}
	return &params{v: m, prefix: p.field(name) + ".", err: p.err}
}

// plain converts a value tree to what encoding/json would decode. It
// converts objects and arrays in place: the tree belongs to the request
// being decoded, and the object accessors are its only readers once a
// field is read as plain JSON.
func plain(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch e.(type) {
			case string, bool, float64, nil:
			default:
				x[k] = plain(e)
			}
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = plain(e)
		}
		return x
	case formValue:
		return string(x)
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
		return string(x)
	}
	return v
}

// badText says what is wrong with a string of a request ("" when nothing
// is): every string must be valid UTF-8 (JSON decoding would otherwise
// replace invalid bytes with U+FFFD, and stores differ in what they keep)
// and must not hold a NUL byte (which some stores cannot keep).
func badText(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "must not contain a NUL byte"
	}
	return ""
}

// checkText returns a 400000 naming field when s is not acceptable text
// (see badText).
func checkText(field, s string) *chat.Error {
	if msg := badText(s); msg != "" {
		return badRequest(field, "%s", msg)
	}
	return nil
}

// checkJSON checks the strings and the nesting of m, decoded from the JSON
// object b: every string and object key must be valid UTF-8 without NUL
// bytes, and no value may nest more than maxDepth levels below its field.
// field names m, "" for a request body (whose members are the fields).
func checkJSON(b []byte, m map[string]any, field string) *chat.Error {
	if !utf8.Valid(b) {
		// encoding/json has replaced the invalid bytes; a second look
		// at the raw tokens finds where they were.
		name, key := invalidUTF8Field(b, field)
		if key {
			return badRequest(name, "keys must be valid UTF-8")
		}
		return badRequest(name, "must be valid UTF-8")
	}
	if err := checkSurrogates(b, m, field); err != nil {
		return err
	}
	if field == "" {
		for k, v := range m {
			if strings.IndexByte(k, 0) >= 0 {
				return badRequest("body", "keys must not contain a NUL byte")
			}
			if err := checkValue(v, k, k, 0); err != nil {
				return err
			}
		}
		return nil
	}
	return checkValue(m, field, field, 0)
}

// checkSurrogates refuses a JSON document b (valid UTF-8, accepted by
// encoding/json, decoded as v) with a string holding a \uXXXX escape of a
// UTF-16 surrogate (D800-DFFF) that is not half of a pair: a lone high or
// low surrogate, or a high one not followed by a low one. encoding/json
// decodes those to U+FFFD, so the text stored would not be the text sent;
// the decoder of package jsontext (github.com/go-json-experiment/json)
// rejects them and says where, as a JSON pointer into v. field names v,
// "" for a request body. Documents without such an escape, nearly all, are
// only scanned for one.
func checkSurrogates(b []byte, v any, field string) *chat.Error {
	if !maySurrogate(b) {
		return nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowDuplicateNames(true))
	_, err := dec.ReadValue()
	se, ok := errors.AsType[*jsontext.SyntacticError](err)
	if !ok {
		return nil // encoding/json accepted b; nothing else differs
	}
	name, key := pointerField(v, se.JSONPointer, field)
	if key {
		return badRequest(name, "keys must not contain a lone surrogate escape (\\ud800-\\udfff outside a high-low pair)")
	}
	return badRequest(name, "must not contain a lone surrogate escape (\\ud800-\\udfff outside a high-low pair)")
}

// maySurrogate reports whether b holds what may be a surrogate escape: a
// \u followed by d or D.
func maySurrogate(b []byte) bool {
	for {
		i := bytes.Index(b, []byte(`\u`))
		if i < 0 || i+2 >= len(b) {
			return false
		}
		if c := b[i+2]; c == 'd' || c == 'D' {
			return true
		}
		b = b[i+2:]
	}
}

// pointerField names the value that the JSON pointer p designates in v
// (decoded from the same document), as the accessors name fields:
// "metadata.k", "tags[1]"; field names v itself ("" for a request body,
// whose members are the fields). key reports that the value is an object:
// a pointer to an object is where a bad member name was found.
func pointerField(v any, p jsontext.Pointer, field string) (name string, key bool) {
	name = field
	for tok := range p.Tokens() {
		switch x := v.(type) {
		case map[string]any:
			if name == "" {
				name = tok
			} else {
				name += "." + tok
			}
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return orBody(name), false
			}
			name += "[" + tok + "]"
			v = x[i]
		default:
			return orBody(name), false
		}
	}
	_, key = v.(map[string]any)
	return orBody(name), key
}

// orBody is name, or "body" for the request body itself.
func orBody(name string) string {
	if name == "" {
		return "body"
	}
	return name
}

// checkValue checks the strings of v, the value of field at depth levels
// below the field top (named in errors about nesting).
func checkValue(v any, field, top string, depth int) *chat.Error {
	switch x := v.(type) {
	case string:
		return checkText(field, x)
	case map[string]any:
		if len(x) > 0 && depth >= maxDepth {
			return badRequest(top, "nested more than %d levels deep", maxDepth)
		}
		for k, e := range x {
			if strings.IndexByte(k, 0) >= 0 {
				return badRequest(field, "keys must not contain a NUL byte")
			}
			if err := checkValue(e, field+"."+k, top, depth+1); err != nil {
				return err
			}
		}
	case []any:
		if len(x) > 0 && depth >= maxDepth {
			return badRequest(top, "nested more than %d levels deep", maxDepth)
		}
		for i, e := range x {
			if err := checkValue(e, field+"["+strconv.Itoa(i)+"]", top, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// invalidUTF8Field returns the name of the first string of the JSON
// document b (valid JSON, an object) whose raw bytes are not valid UTF-8,
// and whether that string is an object key (then name is the object's
// field). field names the document, "" for a request body.
func invalidUTF8Field(b []byte, field string) (name string, key bool) {
	type level struct {
		path    string
		object  bool
		wantKey bool   // in an object: the next string is a key
		key     string // in an object: the key of the current member
		n       int    // in an array: the index of the current element
	}
	var stack []*level
	// valuePath names the value being read in the innermost container.
	valuePath := func() string {
		l := stack[len(stack)-1]
		if !l.object {
			return l.path + "[" + strconv.Itoa(l.n) + "]"
		}
		if l.path == "" {
			return l.key
		}
		return l.path + "." + l.key
	}
	// next moves past the value just read.
	next := func() {
		if len(stack) == 0 {
			return
		}
		if l := stack[len(stack)-1]; l.object {
			l.wantKey = true
		} else {
			l.n++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var prev int64
	for {
		tok, err := dec.Token()
		if err != nil {
			return orBody(field), false
		}
		// Between two tokens there are only ASCII separators, so the raw
		// bytes of this token's stretch are valid exactly when the
		// token's are.
		raw := b[prev:dec.InputOffset()]
		prev = dec.InputOffset()
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				path := field
				if len(stack) > 0 {
					path = valuePath()
				}
				stack = append(stack, &level{path: path, object: t == '{', wantKey: t == '{'})
			default:
				stack = stack[:len(stack)-1]
				next()
			}
		case string:
			if l := stack[len(stack)-1]; l.object && l.wantKey {
				if !utf8.Valid(raw) {
					return orBody(l.path), true
				}
				l.key, l.wantKey = t, false
				continue
			}
			if !utf8.Valid(raw) {
				return valuePath(), false
			}
			next()
		default:
			next()
		}
	}
}
