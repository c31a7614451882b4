package invoice_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/finance/internal/invoice"
	"handoff/migrations"
	"handoff/pkg/integrationkit/pgtest"
)

type settleBundle struct {
	ctx context.Context
	db  *bun.DB
	svc *invoice.Service
}

func setupSettle(t *testing.T) settleBundle {
	t.Helper()
	db, _ := pgtest.NewDB(t, "finance", migrations.Finance())
	svc, err := invoice.NewService(db, invoice.Config{Destination: destination})
	require.NoError(t, err)
	return settleBundle{ctx: context.Background(), db: db, svc: svc}
}

func (b settleBundle) issue(t *testing.T, total int64) invoice.Invoice {
	t.Helper()
	inv, err := b.svc.Issue(b.ctx, invoice.NewInvoice{CustomerID: "cust-42", Currency: "EUR", TotalMinor: &total})
	require.NoError(t, err)
	return inv
}

func (b settleBundle) pay(t *testing.T, inv invoice.Invoice, id string, amount int64) invoice.PaymentResult {
	t.Helper()
	res, err := b.svc.Pay(b.ctx, inv.ID, invoice.NewPayment{PaymentID: id, AmountMinor: amount})
	require.NoError(t, err)
	return res
}

// rows counts the rows a payment or refund writes.
func (b settleBundle) rows(t *testing.T) [3]int {
	t.Helper()
	var n [3]int
	err := b.db.NewRaw(`SELECT (SELECT count(*) FROM payments), (SELECT count(*) FROM refunds),
		(SELECT count(*) FROM finance_outbox)`).Scan(b.ctx, &n[0], &n[1], &n[2])
	require.NoError(t, err)
	return n
}

// A payment id already recorded is looked up before any rule of the invoice's
// state: the same invoice and amount is the recorded payment again, with nothing
// written; anything else is ErrPaymentExists.
func TestPayWithARecordedPaymentID(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		// before records pay-1 and moves the invoice (total 12000) along.
		before     func(t *testing.T, b settleBundle, inv invoice.Invoice)
		onOther    bool
		amount     int64
		wantErr    error
		wantStatus invoice.Status
	}{
		"partial payment again": {
			before:     func(t *testing.T, b settleBundle, inv invoice.Invoice) { b.pay(t, inv, "pay-1", 5000) },
			amount:     5000,
			wantStatus: invoice.StatusPartiallyPaid,
		},
		"settling payment again": {
			before:     func(t *testing.T, b settleBundle, inv invoice.Invoice) { b.pay(t, inv, "pay-1", 12000) },
			amount:     12000,
			wantStatus: invoice.StatusPaid,
		},
		"settling payment again after a refund": {
			before: func(t *testing.T, b settleBundle, inv invoice.Invoice) {
				b.pay(t, inv, "pay-1", 12000)
				_, err := b.svc.Refund(b.ctx, inv.ID, invoice.NewRefund{RefundID: "ref-1"})
				require.NoError(t, err)
			},
			amount:     12000,
			wantStatus: invoice.StatusRefunded,
		},
		"another amount": {
			before:  func(t *testing.T, b settleBundle, inv invoice.Invoice) { b.pay(t, inv, "pay-1", 5000) },
			amount:  4000,
			wantErr: invoice.ErrPaymentExists,
		},
		"another amount on a paid invoice": {
			before:  func(t *testing.T, b settleBundle, inv invoice.Invoice) { b.pay(t, inv, "pay-1", 12000) },
			amount:  1,
			wantErr: invoice.ErrPaymentExists,
		},
		"another invoice": {
			before:  func(t *testing.T, b settleBundle, inv invoice.Invoice) { b.pay(t, inv, "pay-1", 5000) },
			onOther: true,
			amount:  5000,
			wantErr: invoice.ErrPaymentExists,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupSettle(t)
			inv, other := b.issue(t, 12000), b.issue(t, 12000)
			tt.before(t, b, inv)
			first, err := b.svc.Get(b.ctx, inv.ID)
			require.NoError(t, err)
			var recordedAt time.Time
			err = b.db.NewRaw(`SELECT created_at FROM payments WHERE payment_id = 'pay-1'`).Scan(b.ctx, &recordedAt)
			require.NoError(t, err)
			before := b.rows(t)

			target := inv
			if tt.onOther {
				target = other
			}
			res, err := b.svc.Pay(b.ctx, target.ID, invoice.NewPayment{PaymentID: "pay-1", AmountMinor: tt.amount})
			require.Equal(t, before, b.rows(t), "nothing written")
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
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
			b := setupSettle(t)
			inv, other := b.issue(t, 100), b.issue(t, 100)
			b.pay(t, inv, "pay-1", 100)
			if tt.payIt {
				b.pay(t, other, "pay-2", 100)
			}
			first, err := b.svc.Refund(b.ctx, inv.ID, invoice.NewRefund{RefundID: "ref-1", Reason: "damaged"})
			require.NoError(t, err)
			require.False(t, first.Replayed)
			before := b.rows(t)

			target := inv
			if tt.other {
				target = other
			}
			res, err := b.svc.Refund(b.ctx, target.ID, invoice.NewRefund{RefundID: "ref-1", Reason: tt.reason})
			require.Equal(t, before, b.rows(t), "nothing written")
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
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
