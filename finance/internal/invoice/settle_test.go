package invoice_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/finance/internal/invoice"
)

// rows counts the rows a payment or refund writes.
func (b bundle) rows(t *testing.T) [3]int {
	t.Helper()
	var n [3]int
	err := b.DB.NewRaw(`SELECT (SELECT count(*) FROM payments), (SELECT count(*) FROM refunds),
		(SELECT count(*) FROM finance_outbox)`).Scan(b.Ctx, &n[0], &n[1], &n[2])
	require.NoError(t, err)
	return n
}

// replay makes a call with a payment or refund id recorded already and checks that
// it wrote nothing and, when wantErr is set, that it failed with it. ok says whether
// the call succeeded, as it must when no error is wanted.
func replay[R any](t *testing.T, b bundle, wantErr error, call func() (R, error)) (res R, ok bool) {
	t.Helper()
	before := b.rows(t)
	res, err := call()
	require.Equal(t, before, b.rows(t), "nothing written")
	if wantErr != nil {
		require.ErrorIs(t, err, wantErr)
		return res, false
	}
	require.NoError(t, err)
	return res, true
}

// A payment id already recorded is looked up before any rule of the invoice's
// state: the same invoice and amount is the recorded payment again, with nothing
// written; anything else is ErrPaymentExists.
func TestPayWithARecordedPaymentID(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		// before records pay-1 and moves the invoice (total 12000) along.
		before     func(t *testing.T, b bundle, inv invoice.Invoice)
		onOther    bool
		amount     int64
		wantErr    error
		wantStatus invoice.Status
	}{
		"partial payment again": {
			before:     func(t *testing.T, b bundle, inv invoice.Invoice) { b.pay(t, inv, "pay-1", 5000) },
			amount:     5000,
			wantStatus: invoice.StatusPartiallyPaid,
		},
		"settling payment again": {
			before:     func(t *testing.T, b bundle, inv invoice.Invoice) { b.pay(t, inv, "pay-1", 12000) },
			amount:     12000,
			wantStatus: invoice.StatusPaid,
		},
		"settling payment again after a refund": {
			before: func(t *testing.T, b bundle, inv invoice.Invoice) {
				b.pay(t, inv, "pay-1", 12000)
				_, err := b.Invoices.Refund(b.Ctx, inv.ID, invoice.NewRefund{RefundID: "ref-1"})
				require.NoError(t, err)
			},
			amount:     12000,
			wantStatus: invoice.StatusRefunded,
		},
		"another amount": {
			before:  func(t *testing.T, b bundle, inv invoice.Invoice) { b.pay(t, inv, "pay-1", 5000) },
			amount:  4000,
			wantErr: invoice.ErrPaymentExists,
		},
		"another amount on a paid invoice": {
			before:  func(t *testing.T, b bundle, inv invoice.Invoice) { b.pay(t, inv, "pay-1", 12000) },
			amount:  1,
			wantErr: invoice.ErrPaymentExists,
		},
		"another invoice": {
			before:  func(t *testing.T, b bundle, inv invoice.Invoice) { b.pay(t, inv, "pay-1", 5000) },
			onOther: true,
			amount:  5000,
			wantErr: invoice.ErrPaymentExists,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			inv, other := b.issue(t, 12000), b.issue(t, 12000)
			tt.before(t, b, inv)
			first, err := b.Invoices.Get(b.Ctx, inv.ID)
			require.NoError(t, err)
			var recordedAt time.Time
			err = b.DB.NewRaw(`SELECT created_at FROM payments WHERE payment_id = 'pay-1'`).Scan(b.Ctx, &recordedAt)
			require.NoError(t, err)

			target := inv
			if tt.onOther {
				target = other
			}
			res, ok := replay(t, b, tt.wantErr, func() (invoice.PaymentResult, error) {
				return b.Invoices.Pay(b.Ctx, target.ID, invoice.NewPayment{PaymentID: "pay-1", AmountMinor: tt.amount})
			})
			if !ok {
				return
			}
			require.True(t, res.Replayed)
			require.Equal(t, "pay-1", res.Payment.PaymentID)
			require.Equal(t, inv.ID, res.Payment.InvoiceID)
			require.Equal(t, tt.amount, res.Payment.AmountMinor)
			require.True(t, recordedAt.Equal(res.Payment.CreatedAt), "the payment as recorded")
			require.Equal(t, tt.wantStatus, res.Invoice.Status)
			require.Equal(t, first.EventSeq, res.Invoice.EventSeq)
			require.Equal(t, first.PaidMinor, res.Invoice.PaidMinor)
		})
	}
}

// A refund id already recorded is looked up first: for the same invoice it is the
// recorded refund again, whatever the reason given this time; for another invoice it
// is ErrRefundExists, even when that invoice could not be refunded anyway.
func TestRefundWithARecordedRefundID(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		other   bool
		payIt   bool
		reason  string
		wantErr error
	}{
		"same reason":                      {reason: "damaged"},
		"another reason":                   {reason: "lost in transit"},
		"another paid invoice":             {other: true, payIt: true, reason: "damaged", wantErr: invoice.ErrRefundExists},
		"another invoice that is not paid": {other: true, reason: "damaged", wantErr: invoice.ErrRefundExists},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			inv, other := b.issue(t, 100), b.issue(t, 100)
			b.pay(t, inv, "pay-1", 100)
			if tt.payIt {
				b.pay(t, other, "pay-2", 100)
			}
			first, err := b.Invoices.Refund(b.Ctx, inv.ID, invoice.NewRefund{RefundID: "ref-1", Reason: "damaged"})
			require.NoError(t, err)
			require.False(t, first.Replayed)

			target := inv
			if tt.other {
				target = other
			}
			res, ok := replay(t, b, tt.wantErr, func() (invoice.RefundResult, error) {
				return b.Invoices.Refund(b.Ctx, target.ID, invoice.NewRefund{RefundID: "ref-1", Reason: tt.reason})
			})
			if !ok {
				return
			}
			require.True(t, res.Replayed)
			require.Equal(t, first.Refund.RefundID, res.Refund.RefundID)
			require.Equal(t, first.Refund.AmountMinor, res.Refund.AmountMinor)
			require.Equal(t, "damaged", res.Refund.Reason, "the reason as recorded")
			require.True(t, first.Refund.CreatedAt.Equal(res.Refund.CreatedAt))
			require.Equal(t, invoice.StatusRefunded, res.Invoice.Status)
			require.Equal(t, first.Invoice.EventSeq, res.Invoice.EventSeq)
		})
	}
}
