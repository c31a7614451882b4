package invoice_test

import (
	"testing"

	"github.com/uptrace/bun"

	"handoff/finance/internal/invoice"
	"handoff/migrations"
	"handoff/pkg/integrationkit/outbox/outboxtest"
	"handoff/pkg/integrationkit/pgtest"
)

// The kit's outbox keeps its contract on finance's own table, as finance's
// migrations make it: claims, leases, settlements and operator changes included.
func TestOutboxConformsOnFinanceOutbox(t *testing.T) {
	t.Parallel()
	outboxtest.Exercise(t, func(t *testing.T) *bun.DB {
		db, _ := pgtest.NewDB(t, "finance", migrations.Finance())
		return db
	}, invoice.OutboxTable)
}
