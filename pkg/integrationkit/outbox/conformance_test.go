package outbox_test

import (
	"testing"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/outbox/outboxtest"
)

// The store keeps its own contract on the table outbox.Schema makes.
func TestStoreConformsOnItsSchema(t *testing.T) {
	t.Parallel()
	outboxtest.Exercise(t, func(t *testing.T) *bun.DB {
		db, _, _ := outboxtest.Setup(t)
		return db
	}, outboxtest.Table)
}
