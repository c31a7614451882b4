package shipment_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.uber.org/goleak"

	"handoff/pkg/integrationkit/pgdb"

	"handoff/logistics/internal/logisticstest"
	"handoff/logistics/internal/shipment"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	db  *bun.DB
	svc *shipment.Service
}

func setup(t *testing.T) bundle {
	t.Helper()
	db := logisticstest.NewDB(t)
	return bundle{db: db, svc: shipment.NewService(db)}
}

func event(typ shipment.EventType, invoice uuid.UUID, seq int64) shipment.Event {
	return shipment.Event{
		Type: typ, InvoiceID: invoice, InvoiceNumber: "INV-000001", CustomerID: "cust-42",
		Sequence: seq, IdempotencyKey: fmt.Sprintf("%s:%s:%d", typ, invoice, seq),
	}
}

// apply applies ev in a transaction of its own, as the webhook would.
func (b bundle) apply(ev shipment.Event) (shipment.Result, error) {
	return logisticstest.Apply(b.db, b.svc, ev)
}

// applied applies ev, which must apply without error, and returns its result.
func (b bundle) applied(t *testing.T, ev shipment.Event) shipment.Result {
	t.Helper()
	res, err := b.apply(ev)
	require.NoError(t, err)
	return res
}

// applyBehind applies ev in a transaction of its own while tx, which holds ev's
// invoice lock, is open: it waits until the application waits on a lock, then commits
// tx and returns what the application answers.
func (b bundle) applyBehind(t *testing.T, tx bun.Tx, ev shipment.Event) (shipment.Result, error) {
	t.Helper()
	type result struct {
		res shipment.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := b.apply(ev)
		done <- result{res, err}
	}()
	require.Eventually(t, func() bool {
		var n int
		err := b.db.NewRaw(`SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(context.Background(), &n)
		return err == nil && n == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, tx.Commit())
	got := <-done
	return got.res, got.err
}

// waiting creates a waiting shipment for a new invoice, as its invoice.paid would.
func (b bundle) waiting(t *testing.T) (uuid.UUID, shipment.Detail) {
	t.Helper()
	inv := uuid.New()
	b.applied(t, event(shipment.InvoicePaid, inv, 2))
	return inv, b.byInvoice(t, inv)
}

func (b bundle) byInvoice(t *testing.T, invoice uuid.UUID) shipment.Detail {
	t.Helper()
	page, err := b.svc.List(context.Background(), shipment.Filter{InvoiceID: invoice}, 1)
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	d, err := b.svc.Get(context.Background(), page.Items[0].ID)
	require.NoError(t, err)
	return d
}

func (b bundle) count(t *testing.T, table string) int64 {
	t.Helper()
	n, err := b.db.NewSelect().Table(table).Count(context.Background())
	require.NoError(t, err)
	return n
}

func TestEventsDriveTheShipment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := uuid.New()

	require.Equal(t, shipment.ResultApplied, b.applied(t, event(shipment.InvoiceIssued, inv, 1)))
	d := b.byInvoice(t, inv)
	require.Equal(t, shipment.AwaitingPayment, d.State)
	require.EqualValues(t, 1, d.Version)
	require.Equal(t, "INV-000001", d.InvoiceNumber)
	require.Equal(t, "cust-42", d.CustomerID)

	require.Equal(t, shipment.ResultApplied, b.applied(t, event(shipment.InvoicePaid, inv, 2)))
	d = b.byInvoice(t, inv)
	require.Equal(t, shipment.Waiting, d.State)
	require.EqualValues(t, 2, d.Version)
	require.EqualValues(t, 2, d.LastEventSeq)

	require.Len(t, d.History, 2)
	require.Equal(t, shipment.Change{To: shipment.AwaitingPayment, Version: 1, Cause: "invoice.issued",
		IdempotencyKey: event(shipment.InvoiceIssued, inv, 1).IdempotencyKey, At: d.History[0].At}, d.History[0])
	require.Equal(t, shipment.AwaitingPayment, d.History[1].From)
	require.Equal(t, shipment.Waiting, d.History[1].To)
	require.EqualValues(t, 2, d.History[1].Version)
}

func TestPaidWithoutIssuedCreatesAWaitingShipment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := uuid.New()
	b.applied(t, event(shipment.InvoicePaid, inv, 2))
	d := b.byInvoice(t, inv)
	require.Equal(t, shipment.Waiting, d.State)
	require.EqualValues(t, 1, d.Version)
	require.Len(t, d.History, 1)
}

func TestStaleEventChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv, before := b.waiting(t)

	require.Equal(t, shipment.ResultStale, b.applied(t, event(shipment.InvoiceIssued, inv, 1)))
	require.Equal(t, before, b.byInvoice(t, inv))
}

func TestIgnoredEventKeepsStateAndVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv, _ := b.waiting(t)
	b.applied(t, event(shipment.InvoiceRefunded, inv, 3))

	require.Equal(t, shipment.ResultIgnored, b.applied(t, event(shipment.InvoiceRefunded, inv, 4)))
	d := b.byInvoice(t, inv)
	require.Equal(t, shipment.Cancelled, d.State)
	require.EqualValues(t, 2, d.Version)
	require.EqualValues(t, 4, d.LastEventSeq)
	require.Len(t, d.History, 2)
}

func TestRefundBeforeAnyShipmentIsNotYetApplicable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.apply(event(shipment.InvoiceRefunded, uuid.New(), 3))
	require.ErrorIs(t, err, shipment.ErrNotYetApplicable)
	require.Zero(t, b.count(t, "shipments"))
	require.Zero(t, b.count(t, "shipment_history"))
}

func TestRefundAfterShippingAwaitsTheReturn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	inv, d := b.waiting(t)
	for _, to := range []shipment.State{shipment.Picking, shipment.Packed, shipment.Shipped} {
		var err error
		d, err = b.svc.Move(ctx, d.ID, to, d.Version)
		require.NoError(t, err)
	}
	b.applied(t, event(shipment.InvoiceRefunded, inv, 3))
	d = b.byInvoice(t, inv)
	require.Equal(t, shipment.ReturnPending, d.State)
	require.EqualValues(t, 5, d.Version)
	require.Len(t, d.History, 5)
	require.Equal(t, shipment.CauseWarehouse, d.History[3].Cause)
}

func TestMoveIsOptimisticallyLocked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	inv, d := b.waiting(t)

	moved, err := b.svc.Move(ctx, d.ID, shipment.Picking, d.Version)
	require.NoError(t, err)
	require.Equal(t, shipment.Picking, moved.State)
	require.EqualValues(t, 2, moved.Version)
	require.Len(t, moved.History, 2)

	// A second clerk acting on the version they saw before the first move.
	_, err = b.svc.Move(ctx, d.ID, shipment.Packed, d.Version)
	var ve *shipment.VersionError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, shipment.VersionError{Given: 1, Current: 2}, *ve)

	_, err = b.svc.Move(ctx, d.ID, shipment.Delivered, moved.Version)
	var te *shipment.TransitionError
	require.ErrorAs(t, err, &te)
	require.Equal(t, shipment.TransitionError{From: shipment.Picking, To: shipment.Delivered}, *te)

	_, err = b.svc.Move(ctx, uuid.New(), shipment.Packed, 1)
	require.ErrorIs(t, err, shipment.ErrNotFound)

	require.Equal(t, moved.Shipment, b.byInvoice(t, inv).Shipment)
	require.EqualValues(t, 2, b.count(t, "shipment_history"))
}

func TestGetUnknownShipment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.svc.Get(context.Background(), uuid.New())
	require.ErrorIs(t, err, shipment.ErrNotFound)
}

// Two first events of one invoice race, the first applied alone or in a batch: the
// loser waits on the invoice's lock, which a batch takes as a single application
// does, then applies its event to the winner's shipment instead of failing.
func TestConcurrentFirstEventsOfAnInvoice(t *testing.T) {
	t.Parallel()
	for name, first := range map[string]func(t *testing.T, b bundle, tx bun.Tx, ev shipment.Event){
		"single": func(t *testing.T, b bundle, tx bun.Tx, ev shipment.Event) {
			_, err := b.svc.ApplyEvent(context.Background(), pgdb.Prepared(tx), ev)
			require.NoError(t, err)
		},
		"batch": func(t *testing.T, b bundle, tx bun.Tx, ev shipment.Event) {
			outs, err := b.svc.ApplyEvents(context.Background(), pgdb.Prepared(tx), []shipment.Event{ev})
			require.NoError(t, err)
			require.Equal(t, []shipment.Outcome{{Result: shipment.ResultApplied}}, outs)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			inv := uuid.New()

			tx, err := b.db.BeginTx(context.Background(), nil)
			require.NoError(t, err)
			first(t, b, tx, event(shipment.InvoiceIssued, inv, 1))

			res, err := b.applyBehind(t, tx, event(shipment.InvoicePaid, inv, 2))
			require.NoError(t, err)
			require.Equal(t, shipment.ResultApplied, res)
			d := b.byInvoice(t, inv)
			require.Equal(t, shipment.Waiting, d.State)
			require.EqualValues(t, 2, d.Version)
			require.Len(t, d.History, 2)
		})
	}
}

func TestListPagesInCreationOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var invoices []uuid.UUID
	for i := range 5 {
		inv := uuid.New()
		invoices = append(invoices, inv)
		typ := shipment.InvoicePaid
		if i%2 == 1 {
			typ = shipment.InvoiceIssued
		}
		_, err := b.apply(event(typ, inv, 1))
		require.NoError(t, err)
	}

	var got []uuid.UUID
	f := shipment.Filter{}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3)
		page, err := b.svc.List(ctx, f, 2)
		require.NoError(t, err)
		for _, s := range page.Items {
			got = append(got, s.InvoiceID)
		}
		if !page.More {
			require.Len(t, page.Items, 1)
			break
		}
		f.After = page.Items[len(page.Items)-1].Seq
	}
	require.Equal(t, invoices, got)

	waiting, err := b.svc.List(ctx, shipment.Filter{State: shipment.Waiting}, 10)
	require.NoError(t, err)
	require.Len(t, waiting.Items, 3)
	require.False(t, waiting.More)

	one, err := b.svc.List(ctx, shipment.Filter{InvoiceID: invoices[3]}, 10)
	require.NoError(t, err)
	require.Len(t, one.Items, 1)
	require.Equal(t, shipment.AwaitingPayment, one.Items[0].State)
}

func TestApplyEventJoinsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rollback := errors.New("caller rolls back")
	err := b.db.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := b.svc.ApplyEvent(ctx, pgdb.Prepared(tx), event(shipment.InvoicePaid, uuid.New(), 2))
		require.NoError(t, err)
		return rollback
	})
	require.ErrorIs(t, err, rollback)
	require.Zero(t, b.count(t, "shipments"))
	require.Zero(t, b.count(t, "shipment_history"))
}
