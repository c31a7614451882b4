package invoice

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
)

// Pay records a payment against the invoice in one transaction, under the invoice's
// row lock. A partial payment makes the invoice partially_paid; the payment that
// completes it makes it paid and emits invoice.paid (key
// invoice.paid:<invoice_id>:<payment_id>) with the invoice's next event sequence.
// ErrAlreadyPaid, ErrAmountExceedsBalance and ErrPaymentExists leave nothing written.
func (s *Service) Pay(ctx context.Context, id uuid.UUID, n NewPayment) (Invoice, Payment, error) {
	if err := n.validate(); err != nil {
		return Invoice{}, Payment{}, err
	}
	pay := Payment{PaymentID: n.PaymentID, InvoiceID: id, AmountMinor: n.AmountMinor}
	var inv Invoice
	err := pgdb.RunInTx(ctx, s.db, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if inv, err = s.store.invoice(ctx, tx, id, true); err != nil {
			return err
		}
		settled, err := inv.applyPayment(n.AmountMinor)
		if err != nil {
			return err
		}
		if err := s.store.insertPayment(ctx, tx, &pay); err != nil {
			return err
		}
		if err := s.store.updateSettlement(ctx, tx, &inv); err != nil {
			return err
		}
		if settled {
			if err := s.emit(ctx, tx, paidEvent(inv, pay), inv.EventSeq); err != nil {
				return err
			}
		}
		return s.withLines(ctx, tx, &inv)
	})
	if err != nil {
		return Invoice{}, Payment{}, fmt.Errorf("pay invoice %s: %w", id, err)
	}
	return inv, pay, nil
}

// Refund refunds a paid invoice in full in one transaction, under its row lock:
// status refunded, and invoice.refunded emitted (key
// invoice.refunded:<invoice_id>:<refund_id>). ErrNotPaid, ErrAlreadyRefunded and
// ErrRefundExists leave nothing written.
func (s *Service) Refund(ctx context.Context, id uuid.UUID, n NewRefund) (Invoice, Refund, error) {
	if err := n.validate(); err != nil {
		return Invoice{}, Refund{}, err
	}
	ref := Refund{RefundID: n.RefundID, InvoiceID: id, Reason: n.Reason}
	var inv Invoice
	err := pgdb.RunInTx(ctx, s.db, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if inv, err = s.store.invoice(ctx, tx, id, true); err != nil {
			return err
		}
		if ref.AmountMinor, err = inv.applyRefund(); err != nil {
			return err
		}
		if err := s.store.insertRefund(ctx, tx, &ref); err != nil {
			return err
		}
		if err := s.store.updateSettlement(ctx, tx, &inv); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, refundedEvent(inv, ref), inv.EventSeq); err != nil {
			return err
		}
		return s.withLines(ctx, tx, &inv)
	})
	if err != nil {
		return Invoice{}, Refund{}, fmt.Errorf("refund invoice %s: %w", id, err)
	}
	return inv, ref, nil
}
