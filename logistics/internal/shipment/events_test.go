package shipment_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"

	"handoff/logistics/internal/shipment"
)

func (b bundle) applyAll(t *testing.T, evs ...shipment.Event) []shipment.Outcome {
	t.Helper()
	var outs []shipment.Outcome
	err := b.db.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		outs, err = b.svc.ApplyEvents(ctx, pgdb.Prepared(tx), evs)
		return err
	})
	require.NoError(t, err)
	require.Len(t, outs, len(evs))
	return outs
}

// One call applies events of many invoices, each as if it had come alone; events of
// one invoice apply in sequence order whatever their order in the call.
func TestApplyEventsGivesEachEventItsOwnOutcome(t *testing.T) {
	t.Parallel()
	b := setup(t)
	existing, noShipment, paidThenRefunded, reversed, repeated := uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()
	_, err := b.apply(event(shipment.InvoiceIssued, existing, 1))
	require.NoError(t, err)

	outs := b.applyAll(t,
		event(shipment.InvoicePaid, existing, 2),
		event(shipment.InvoiceRefunded, noShipment, 3),
		event(shipment.InvoicePaid, paidThenRefunded, 2), event(shipment.InvoiceRefunded, paidThenRefunded, 3),
		event(shipment.InvoiceIssued, existing, 1),
		event(shipment.InvoiceRefunded, reversed, 2), event(shipment.InvoiceIssued, reversed, 1),
		event(shipment.InvoicePaid, repeated, 2), event(shipment.InvoicePaid, repeated, 3),
	)
	applied := shipment.Outcome{Result: shipment.ResultApplied}
	require.Equal(t, []shipment.Outcome{
		applied, {Err: shipment.ErrNotYetApplicable}, applied, applied, {Result: shipment.ResultStale},
		applied, applied, applied, {Result: shipment.ResultIgnored},
	}, outs)

	for inv, want := range map[uuid.UUID]struct {
		state            shipment.State
		version, lastSeq int64
		history          int
	}{
		existing:         {shipment.Waiting, 2, 2, 2},
		paidThenRefunded: {shipment.Cancelled, 2, 3, 2},
		reversed:         {shipment.Cancelled, 2, 2, 2},
		repeated:         {shipment.Waiting, 1, 3, 1},
	} {
		d := b.byInvoice(t, inv)
		require.Equal(t, want.state, d.State, inv)
		require.Equal(t, want.version, d.Version, inv)
		require.Equal(t, want.lastSeq, d.LastEventSeq, inv)
		require.Len(t, d.History, want.history, inv)
		for i, c := range d.History {
			require.EqualValues(t, i+1, c.Version, "history is in the order applied")
		}
	}
	require.EqualValues(t, 4, b.count(t, "shipments"))
}
