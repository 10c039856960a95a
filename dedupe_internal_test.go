package chat

import (
	"fmt"
	"slices"
	"testing"
)

// TestDedupe checks dedupe on both of its paths: few distinct ids
// (compared with those kept) and more than dedupeScan (a map), each
// keeping the order of first occurrence.
func TestDedupe(t *testing.T) {
	var many, manyWant []string
	for i := 0; i < 3*dedupeScan; i++ {
		id := fmt.Sprint("u", i)
		many = append(many, id, "u0", id)
		manyWant = append(manyWant, id)
	}
	for _, c := range []struct{ in, want []string }{
		{nil, []string{}},
		{[]string{"a"}, []string{"a"}},
		{[]string{"b", "a", "b", "b", "c", "a"}, []string{"b", "a", "c"}},
		{many, manyWant},
	} {
		if got := dedupe(c.in); !slices.Equal(got, c.want) || got == nil {
			t.Errorf("dedupe(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
