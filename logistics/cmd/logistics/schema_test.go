package main

import (
	"testing"

	"handoff/logistics/internal/webhookapi"
	"handoff/migrations"
	"handoff/pkg/integrationkit/inbox"
	"handoff/pkg/integrationkit/pgtest"
)

// TestMigrationsMatchTheKitsTables checks that logistics' migrations, applied in
// full, give the inbox table exactly the shape of inbox.Schema, plus the columns
// logistics fills through inbox.Item.Columns and the index of its own lookup by
// invoice, named here.
func TestMigrationsMatchTheKitsTables(t *testing.T) {
	t.Parallel()
	db, _ := pgtest.NewDB(t, "logistics", migrations.Logistics())
	pgtest.MatchDDL(t, db, inbox.Schema(webhookapi.ProcessedEventsTable), map[string]pgtest.Extra{
		webhookapi.ProcessedEventsTable: {
			Columns: []string{"event_id", "event_type", "invoice_id"},
			Indexes: []string{"logistics_processed_events_invoice_idx"},
		},
	})
}
