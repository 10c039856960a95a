package sqlite

import (
	"context"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// prefixFold is the reference: p is a prefix of s when their runes are
// equal under simple case folding, one by one (what the memory store does).
func prefixFold(s, p string) bool {
	for p != "" {
		if s == "" {
			return false
		}
		r1, n1 := utf8.DecodeRuneInString(s)
		r2, n2 := utf8.DecodeRuneInString(p)
		eq := r1 == r2
		for f := unicode.SimpleFold(r1); !eq && f != r1; f = unicode.SimpleFold(f) {
			eq = f == r2
		}
		if !eq {
			return false
		}
		s, p = s[n1:], p[n2:]
	}
	return true
}

func TestFoldKey(t *testing.T) {
	t.Parallel()
	words := []string{"", "a", "A", "abc", "ABC", "Kelvin", "\u212aelvin", "kELVIN", "ſtraße", "STRASSE", "Straße",
		"σίσυφος", "ΣΊΣΥΦΟΣ", "ς", "İstanbul", "istanbul", "ıstanbul", "ǅemal", "ǆemal", "Ǆ", "µ", "Μ", "μ",
		"日本語", "x\xffy", "x\uFFFDy", "ﬀ", "ΐ"}
	for _, s := range words {
		for _, p := range words {
			want := prefixFold(s, p)
			got := strings.HasPrefix(foldKey(s), foldKey(p))
			require.Equal(t, want, got, "prefix %q of %q", p, s)
		}
	}
	require.Equal(t, "kelvin", foldKey("\u212aELVIN"))
}

func TestQueryUsersUnicodeSearch(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	now := chat.NewTime(t0)
	names := map[string]string{"u1": "Σωκράτης", "u2": "σοφία", "u3": "Kelvin", "u4": "kate", "u5": "İpek", "u6": "ZOË"}
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		for id, n := range names {
			if err := tx.CreateUser(ctx, &chat.User{UserID: id, DisplayName: n, CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
		}
		return nil
	}))
	for search, want := range map[string][]string{
		"σ": {"u1", "u2"}, "Σο": {"u2"}, "\u212a": {"u3", "u4"}, "ka": {"u4"}, "i": nil, "İ": {"u5"},
		"zoë": {"u6"}, "U": {"u1", "u2", "u3", "u4", "u5", "u6"}, "u3": {"u3"},
	} {
		var got []string
		require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
			us, err := tx.QueryUsers(ctx, chat.UserFilter{Search: chat.SearchKey(search)})
			for _, u := range us {
				got = append(got, u.UserID)
			}
			return err
		}))
		require.Equal(t, want, got, "search %q", search)
	}
}
