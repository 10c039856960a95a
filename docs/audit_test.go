package docs_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestAuditActionsDocumented: the audit actions of the engine are the
// AuditAction enum of openapi.yaml, and each has a row in api.md.
func TestAuditActionsDocumented(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	s, ok := doc.Components.Schemas["AuditAction"]
	require.True(t, ok, "openapi.yaml has no AuditAction schema")
	var enum []string
	for _, v := range s.Value.Enum {
		enum = append(enum, v.(string))
	}
	require.ElementsMatch(t, chat.AuditActions, enum)
	ref, err := os.ReadFile("api.md")
	require.NoError(t, err)
	for _, a := range chat.AuditActions {
		require.True(t, strings.Contains(string(ref), "| `"+a+"`") || strings.Contains(string(ref), ", `"+a+"`"),
			"api.md has no row for the audit action %s", a)
	}
}
