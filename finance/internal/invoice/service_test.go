package invoice_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"handoff/finance/internal/invoice"
	"handoff/pkg/integrationkit/outbox"
)

func TestConfigNeedsAnAbsoluteURL(t *testing.T) {
	t.Parallel()
	for _, dest := range []string{"", "127.0.0.1:8082/webhooks", "ftp://host/x", "/webhooks/finance"} {
		_, err := invoice.NewService(nil, invoice.Config{Destination: dest})
		require.ErrorContains(t, err, "Destination", dest)
	}
}

// TestPaymentAndEventCommitTogether makes the event's insert fail and checks that
// the payment it belongs to was rolled back with it.
func TestPaymentAndEventCommitTogether(t *testing.T) {
	t.Parallel()
	b := setup(t)
	total := int64(500)
	inv := b.issue(t, total)

	_, err := b.Outbox.Enqueue(b.Ctx, b.DB, outbox.Event{Type: "x", AggregateKey: "elsewhere", Sequence: 1,
		IdempotencyKey: "invoice.paid:" + inv.ID.String() + ":pay-1", Destination: destination, Payload: map[string]any{}})
	require.NoError(t, err)

	_, err = b.Invoices.Pay(b.Ctx, inv.ID, invoice.NewPayment{PaymentID: "pay-1", AmountMinor: total})
	require.ErrorIs(t, err, outbox.ErrDuplicate)

	got, err := b.Invoices.Get(b.Ctx, inv.ID)
	require.NoError(t, err)
	require.Equal(t, invoice.StatusIssued, got.Status)
	require.Zero(t, got.PaidMinor)
	require.EqualValues(t, 1, got.EventSeq)
	payments, err := b.DB.NewSelect().Table("payments").Count(b.Ctx)
	require.NoError(t, err)
	require.Zero(t, payments)
}

func TestInvoiceNumbersFollowIssueOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	total := int64(1)

	_, err := b.Invoices.Issue(b.Ctx, invoice.NewInvoice{CustomerID: "c", Currency: "NOPE", TotalMinor: &total})
	require.Error(t, err)
	for _, want := range []string{"INV-000001", "INV-000002"} {
		require.Equal(t, want, b.issue(t, total).Number)
	}
	_, err = b.DB.NewRaw(`SELECT setval(pg_get_serial_sequence('invoices', 'seq'), 1234567)`).Exec(b.Ctx)
	require.NoError(t, err)
	require.Equal(t, "INV-1234568", b.issue(t, total).Number, "numbers grow past six digits instead of being cut")
}
