package docs_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPageSizeDocumented: the reference states the page sizes the Service
// accepts. Every limit is 0-100, and 0 (or no value) means the endpoint's
// default: the spec itself gives GET /reactions/messages/most a limit
// defaulting to 0, so spec clients send 0. openapi.yaml says the same
// (minimum 0); TestOpenAPIResponses drives the handlers with it.
func TestPageSizeDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("api.md")
	require.NoError(t, err)
	row := regexp.MustCompile(`(?m)^\| (?:options\.)?(?:limit|first|last) \|.*$`)
	rows := row.FindAllString(string(b), -1)
	require.GreaterOrEqual(t, len(rows), 6, "the limit rows of the reference")
	for _, r := range rows {
		cells := strings.Split(strings.Trim(r, "| "), "|")
		last := strings.TrimSpace(cells[len(cells)-1])
		require.True(t, strings.HasPrefix(last, "0-100") || strings.HasPrefix(last, "0 "),
			"a page size row that does not accept 0: %s", r)
	}
	size := regexp.MustCompile(`(?m)^\| page size \|(.*)\|.*\|$`).FindStringSubmatch(string(b))
	require.NotNil(t, size)
	require.Contains(t, size[1], "0-100")
}
