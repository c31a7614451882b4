// Package outboxtest tests outboxes: Exercise is the conformance suite an adopter runs
// against its own migrated outbox table, Setup gives kit tests an outbox table made by
// outbox.Schema, in a fresh PostgreSQL database, and ClaimOne claims an event there.
package outboxtest

import (
	"testing"
	"testing/fstest"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgtest"
)

// Table is the name of the outbox table Setup creates.
const Table = "kit_outbox"

// Setup returns a fresh database holding an empty outbox table, its URL and its store.
func Setup(t testing.TB) (*bun.DB, string, *outbox.Store) {
	t.Helper()
	fs := fstest.MapFS{
		"000001_outbox.up.sql":   {Data: []byte(outbox.Schema(Table))},
		"000001_outbox.down.sql": {Data: []byte("DROP TABLE kit_outbox_attempts; DROP TABLE kit_outbox;")},
	}
	db, url := pgtest.NewDB(t, "kitoutbox", fs)
	store, err := outbox.NewStore(Table)
	if err != nil {
		t.Fatal(err)
	}
	return db, url, store
}
