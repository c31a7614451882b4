package inbox_test

import (
	"testing"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/inbox/inboxtest"
	"handoff/pkg/integrationkit/pgtest"
)

// The inbox keeps its own contract on the table inbox.Schema makes, with a column of
// the consumer's own.
func TestInboxConformsOnItsSchema(t *testing.T) {
	t.Parallel()
	inboxtest.Exercise(t, func(t *testing.T) *bun.DB {
		db, _ := pgtest.NewDB(t, "inbox", schema)
		return db
	}, "test_inbox", func(key string) map[string]any { return map[string]any{"note": "n-" + key} })
}
