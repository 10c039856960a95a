package chat

import (
	"fmt"
	"regexp"
	"testing"
)

// The fast path of blacklist regexes (a rewritten pattern run on the
// case-folded text) must agree with the plain case-insensitive RE2 pattern
// on the original text.
func TestFoldedPatternAgreesWithCaseInsensitiveRE2(t *testing.T) {
	patterns := []string{
		"b[a4]dw[o0]rd", "[A-z]", "x[A-z]y", "[Z-a]x", "σοφίας", "straße", "k+", "[^a-z]+q",
		"colou?r", `\d{3}`, `\w+K`, "[[:alpha:]]+x", "ǆ", "ſt", "(ab|cd)+e", "^start", "end$", ".+Ω",
		"[À-Þ]", "ß", "İ", "ı",
	}
	texts := []string{
		"", "badword", "B4DW0RD", "_", "x_y", "X`Y", "_x", "ΣΟΦΊΑΣ", "σοφίασ", "STRASSE", "Straße",
		"\u212a\u212A", "KK", "--q", "ÄQ", "COLOR", "Colour", "123", "a\u212a", "abc", "Ǆ", "ǅ",
		"ſt", "ST", "ABCDE", "START here", "the END", "xΩ", "xω", "Ä", "ä", "×", "İ", "i", "I", "ı",
	}
	for _, p := range patterns {
		want := regexp.MustCompile(`(?i)(?:` + p + `)`)
		fp, ok := foldedPattern(p)
		if !ok {
			t.Fatalf("%q: no folded form", p)
		}
		got, err := regexp.Compile(fp)
		if err != nil {
			t.Fatalf("%q -> %q: %v", p, fp, err)
		}
		for _, s := range texts {
			if w, g := want.MatchString(s), got.MatchString(lowerText(s)); w != g {
				t.Errorf("pattern %q (folded %q) on %q: RE2 says %v, fast path %v", p, fp, s, w, g)
			}
		}
	}
	for _, p := range []string{`\bword`, `(?-i)Word`, `a\Bb`} {
		if _, ok := foldedPattern(p); ok {
			t.Errorf("%q must not take the folded fast path", p)
		}
	}
}

// Plain words fold the way RE2's case-insensitive matching does.
func TestLowerTextFoldsLikeRE2(t *testing.T) {
	for _, c := range [][2]string{{"ΣΟΦΊΑΣ", "σοφίας"}, {"\u212aelvin", "kelvin"}, {"ſpam", "SPAM"}, {"Ǆ", "ǆ"}, {"ABC", "abc"}} {
		if lowerText(c[0]) != lowerText(c[1]) {
			t.Errorf("%q and %q fold differently: %q, %q", c[0], c[1], lowerText(c[0]), lowerText(c[1]))
		}
		if !regexp.MustCompile(`(?i)` + regexp.QuoteMeta(c[1])).MatchString(c[0]) {
			t.Errorf("RE2 does not fold %q and %q together", c[0], c[1])
		}
	}
	if s := "already lower"; lowerText(s) != s {
		t.Error("lower-case ASCII must come back unchanged")
	}
}

// BenchmarkBlacklistMatch measures the rule check of a 300-character text
// against n plain blacklist words (plus five regex entries): the plain
// words are matched together, so ns/op stays flat as n grows.
func BenchmarkBlacklistMatch(b *testing.B) {
	text := "Hello team, the release notes for this week are ready. Please read them at https://docs.example.com/pub/notes " +
		"before the meeting and bring your questions. We will go through the open items one by one and decide who takes " +
		"which task next. Thanks again for all the good work on the new search! ok ok ok ok ok ok ok ok ok ok ok ok ok"
	text = text[:300]
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("words=%d", n), func(b *testing.B) {
			words := make([]string, n)
			exact := make([]bool, n)
			for i := range words {
				words[i] = fmt.Sprintf("badword%d", i)
				exact[i] = i%2 == 0
			}
			rs := &ruleSet{words: newWordMatcher(words, exact, words)}
			for _, p := range []string{"darn", "heck", "b[a4]dw[o0]rd", "fr[i1]ck", "sh[o0]ot"} {
				re, err := compileBlacklistRegex(p, true)
				if err != nil {
					b.Fatal(err)
				}
				rs.regexes = append(rs.regexes, re)
				rs.regexIDs = append(rs.regexIDs, p)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if id := rs.blacklisted(text); id != "" {
					b.Fatal(id)
				}
			}
		})
	}
}
