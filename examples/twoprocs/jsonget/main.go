// Command jsonget prints one value of the JSON document read on stdin, for
// shell scripts: the argument is a dotted path of object keys and array
// indexes, for example "token" or "messages.0.text". A string is printed
// as it is, any other value as JSON. A missing value exits with status 1.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: jsonget PATH < document.json  (PATH: key.0.key)")
		os.Exit(2)
	}
	var doc any
	if err := json.NewDecoder(os.Stdin).Decode(&doc); err != nil {
		fmt.Fprintln(os.Stderr, "jsonget: reading JSON:", err)
		os.Exit(1)
	}
	v, err := lookup(doc, os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsonget:", err)
		os.Exit(1)
	}
	if s, ok := v.(string); ok {
		fmt.Println(s)
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsonget:", err)
		os.Exit(1)
	}
	fmt.Println(string(b))
}

// lookup follows path (keys and indexes separated by dots) into doc.
func lookup(doc any, path string) (any, error) {
	v := doc
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[part]
			if !ok {
				return nil, fmt.Errorf("no key %q in %q", part, path)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("no index %q in %q (array of %d)", part, path, len(x))
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("%q: cannot look up %q in a %T", path, part, v)
		}
	}
	return v, nil
}
