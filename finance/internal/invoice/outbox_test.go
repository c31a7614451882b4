package invoice_test

import (
	"testing"

	"github.com/uptrace/bun"

	"handoff/finance/internal/financetest"
	"handoff/finance/internal/invoice"
	"handoff/pkg/integrationkit/outbox/outboxtest"
)

// The kit's outbox keeps its contract on finance's own table, as finance's
// migrations make it: claims, leases, settlements and operator changes included.
func TestOutboxConformsOnFinanceOutbox(t *testing.T) {
	t.Parallel()
	outboxtest.Exercise(t, func(t *testing.T) *bun.DB {
		return financetest.NewDB(t)
	}, invoice.OutboxTable)
}
