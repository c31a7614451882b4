package main

import (
	"testing"

	"handoff/finance/internal/invoice"
	"handoff/migrations"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/idempotency"
	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pager"
	"handoff/pkg/integrationkit/pgtest"
	"handoff/pkg/integrationkit/retention"
)

// TestMigrationsMatchTheKitsTables checks that finance's migrations, applied in full,
// give every table a kit package runs SQL on exactly the shape of that package's
// Schema. The only additions allowed are named here, each with the reason it is
// finance's and not the kit's.
func TestMigrationsMatchTheKitsTables(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t, "finance", migrations.Finance())
	ddl := outbox.Schema(invoice.OutboxTable) +
		retention.ArchiveSchema(invoice.OutboxTable) +
		breaker.Schema(breakerTable) +
		pager.Schema(alertTable) +
		idempotency.Schema(idempotency.DefaultTable)
	pgtest.MatchDDL(t, db, ddl, map[string]pgtest.Extra{
		// The dashboard's per-minute rollup (internal/insight) reads attempts by start.
		invoice.OutboxTable + "_attempts": {Indexes: []string{"finance_outbox_attempts_started_idx"}},
	})
}
