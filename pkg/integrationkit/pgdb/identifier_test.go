package pgdb_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/pgdb"
)

func TestValidIdentifier(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"finance_outbox":           true,
		"_private":                 true,
		"t2":                       true,
		strings.Repeat("a", 51):    true,
		strings.Repeat("a", 52):    false,
		"":                         false,
		"2fast":                    false,
		"Outbox":                   false,
		"public.outbox":            false,
		`outbox"; DROP TABLE x --`: false,
		"outbox events":            false,
	} {
		require.Equal(t, want, pgdb.ValidIdentifier(name), "%q", name)
	}
}
