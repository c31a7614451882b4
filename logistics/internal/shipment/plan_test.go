package shipment_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"handoff/logistics/internal/shipment"
	"handoff/pkg/integrationkit/pgdb"
)

// A batch of a hundred events on a table of 10,000 shipments finds and updates its
// shipments through their indexes: neither the locked read nor the update reads the
// table whole, which plans made for a hundred counted array elements both did there
// (a sequential scan, and a hash join over one), at a cost that grew with the table.
func TestBatchFindsItsShipmentsByIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.db.SetMaxOpenConns(1) // one backend: its statistics are flushed on request
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := b.db.ExecContext(ctx, sql, args...)
		require.NoError(t, err)
	}
	exec(`INSERT INTO shipments (id, invoice_id, invoice_number, customer_id, state, version, last_event_seq)
		SELECT gen_random_uuid(), gen_random_uuid(), 'INV-' || g, 'cust', 'awaiting_payment', 1, 1
		FROM generate_series(1, 10000) AS g`)
	exec(`ANALYZE shipments`)
	var invoices []uuid.UUID
	require.NoError(t, b.db.NewRaw(`SELECT invoice_id FROM shipments ORDER BY random() LIMIT 100`).Scan(ctx, &invoices))
	seqScans := func() int64 {
		t.Helper()
		exec(`SELECT pg_stat_force_next_flush()`)
		var n int64
		require.NoError(t, b.db.QueryRowContext(ctx,
			`SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'shipments'`).Scan(&n))
		return n
	}
	before := seqScans()

	events := make([]shipment.Event, len(invoices))
	for i, inv := range invoices {
		events[i] = event(shipment.InvoicePaid, inv, 2)
	}
	tx, err := b.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	outs, err := b.svc.ApplyEvents(ctx, pgdb.Prepared(tx), events)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	for _, o := range outs {
		require.Equal(t, shipment.ResultApplied, o.Result)
	}
	require.Equal(t, before, seqScans(), "the batch read the shipments table whole")
	var waiting int
	require.NoError(t, b.db.QueryRowContext(ctx, `SELECT count(*) FROM shipments WHERE state = 'waiting'`).Scan(&waiting))
	require.Equal(t, len(invoices), waiting)
}
