package httpapi

import (
	"errors"
	"testing"

	chat "github.com/chatengine/chat"
)

// exercise reads every top-level field with every accessor and checks
// that any error is a 400000.
func exercise(t *testing.T, v map[string]any) {
	for k := range v {
		for _, read := range []func(p *params){
			func(p *params) { p.str(k) },
			func(p *params) { p.strs(k) },
			func(p *params) { p.strsPtr(k) },
			func(p *params) { p.integer(k) },
			func(p *params) { p.int64Ptr(k) },
			func(p *params) { p.boolean(k) },
			func(p *params) { p.object(k) },
			func(p *params) { p.objectPtr(k) },
			func(p *params) {
				s := p.sub(k)
				for kk := range s.v {
					s.str(kk)
					s.integer(kk)
					s.strs(kk)
				}
			},
		} {
			p := newParams(v)
			read(p)
			requireBadRequest(t, p.Err())
		}
	}
}

func requireBadRequest(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ce *chat.Error
	if !errors.As(err, &ce) || ce.Code != chat.CodeBadRequest {
		t.Fatalf("error %v is not a 400000", err)
	}
}

// FuzzDecodeForm: the form decoder never panics and fails only with
// 400000.
func FuzzDecodeForm(f *testing.F) {
	for _, s := range []string{
		"userIds=a&userIds=b", "userIds[]=a", "userIds[0]=a&userIds[1]=b", "userIds=%5B%22a%22%5D",
		"options[limit]=10&options[token]=x", "metadata[a][b]=1", "metadata=%7B%22a%22%3A1%7D",
		"a=1&a[k]=2", "a[0][b][]=1", "x[99999999999]=1", "b=true&n=-1", `{"userIds":["a"]}`, ` {"a":`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		v, err := decodeBody("application/x-www-form-urlencoded", []byte(body))
		requireBadRequest(t, err)
		if err == nil {
			exercise(t, v)
		}
	})
}

// FuzzDecodeJSON: the JSON decoder never panics and fails only with
// 400000.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"userIds":["a","b"]}`, `{"options":{"limit":10,"after":1e3}}`, `{"mutePeriod":-1}`,
		`{"data":{"text":"hi","n":[1,{"x":null}]}}`, `{"a":1} x`, `[1]`, `{"b":"true"}`, `{"n":1.5e400}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, ct := range []string{"application/json", ""} {
			v, err := decodeBody(ct, body)
			if err != nil && chat.ErrorCode(err) == chat.CodeUnsupportedMedia {
				continue
			}
			requireBadRequest(t, err)
			if err == nil {
				exercise(t, v)
			}
		}
	})
}
