package invoice

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
)

// PaymentResult is what Pay did: the invoice as it now stands and the payment.
type PaymentResult struct {
	Invoice Invoice
	Payment Payment
	// Replayed is true when the payment id was already recorded for this invoice with
	// this amount: the same business fact, so nothing was written and Payment is the
	// payment as recorded then.
	Replayed bool
}

// RefundResult is what Refund did: the invoice as it now stands and the refund.
type RefundResult struct {
	Invoice Invoice
	Refund  Refund
	// Replayed is true when the refund id was already recorded for this invoice:
	// nothing was written and Refund is the refund as recorded then, with its reason.
	Replayed bool
}

// Pay records a payment against the invoice in one transaction, under the invoice's
// row lock. A partial payment makes the invoice partially_paid; the payment that
// completes it makes it paid and emits invoice.paid (key
// invoice.paid:<invoice_id>:<payment_id>) with the invoice's next event sequence.
//
// The payment id is the payment's natural key and is looked up first, under the lock,
// before any rule of the invoice's state: the same id with the same invoice and
// amount is a replay (PaymentResult.Replayed, nothing written, even when that very
// payment made the invoice paid); the same id with another invoice or amount is
// ErrPaymentExists. ErrAlreadyPaid, ErrAmountExceedsBalance and ErrPaymentExists
// leave nothing written.
func (s *Service) Pay(ctx context.Context, id uuid.UUID, n NewPayment) (PaymentResult, error) {
	if err := n.validate(); err != nil {
		return PaymentResult{}, err
	}
	res := PaymentResult{Payment: Payment{PaymentID: n.PaymentID, InvoiceID: id, AmountMinor: n.AmountMinor}}
	err := s.settle(ctx, "pay", id, &res.Invoice, func(ctx context.Context, tx bun.Tx) (bool, error) {
		prior, found, err := s.store.payment(ctx, tx, n.PaymentID)
		switch {
		case err != nil || !found:
			return false, err
		case prior.InvoiceID != id || prior.AmountMinor != n.AmountMinor:
			return false, ErrPaymentExists
		}
		res.Payment, res.Replayed = prior, true
		return true, nil
	}, func(ctx context.Context, tx bun.Tx) error {
		return s.recordPayment(ctx, tx, &res.Invoice, &res.Payment)
	})
	if err != nil {
		return PaymentResult{}, err
	}
	return res, nil
}

// settle runs one payment or refund of invoice id in a transaction, under the
// invoice's row lock, and reads the invoice into inv. seen looks the payment's or
// refund's id up first, before any rule of the invoice's state: it answers true when
// the id is recorded for this very fact (a replay: nothing is written, and inv gets
// its lines), or an error such as ErrPaymentExists; a new one is recorded by record.
// An error is wrapped in what was done (pay, refund) and the invoice's id.
func (s *Service) settle(ctx context.Context, what string, id uuid.UUID, inv *Invoice,
	seen func(ctx context.Context, tx bun.Tx) (bool, error), record func(ctx context.Context, tx bun.Tx) error) error {
	err := pgdb.RunInTx(ctx, s.db, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if *inv, err = s.store.invoice(ctx, tx, id, true); err != nil {
			return err
		}
		replay, err := seen(ctx, tx)
		switch {
		case err != nil:
			return err
		case replay:
			return s.withLines(ctx, tx, inv)
		}
		return record(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("%s invoice %s: %w", what, id, err)
	}
	return nil
}

// recordPayment applies pay to inv, locked in tx, stores both and emits invoice.paid
// when the payment settles the invoice.
func (s *Service) recordPayment(ctx context.Context, tx bun.Tx, inv *Invoice, pay *Payment) error {
	settled, err := inv.applyPayment(pay.AmountMinor)
	if err != nil {
		return err
	}
	if err := s.store.insertPayment(ctx, tx, pay); err != nil {
		return err
	}
	if err := s.store.updateSettlement(ctx, tx, inv); err != nil {
		return err
	}
	if settled {
		if err := s.emit(ctx, tx, paidEvent(*inv, *pay), inv.EventSeq); err != nil {
			return err
		}
	}
	return s.withLines(ctx, tx, inv)
}

// Refund refunds a paid invoice in full in one transaction, under its row lock:
// status refunded, and invoice.refunded emitted (key
// invoice.refunded:<invoice_id>:<refund_id>).
//
// The refund id is looked up first, under the lock: the same id for the same invoice
// is a replay (RefundResult.Replayed, nothing written) whatever the reason given this
// time, since a refund is always of the whole paid amount and the reason is a note on
// it, not part of the fact; the same id for another invoice is ErrRefundExists.
// ErrNotPaid, ErrAlreadyRefunded and ErrRefundExists leave nothing written.
func (s *Service) Refund(ctx context.Context, id uuid.UUID, n NewRefund) (RefundResult, error) {
	if err := n.validate(); err != nil {
		return RefundResult{}, err
	}
	res := RefundResult{Refund: Refund{RefundID: n.RefundID, InvoiceID: id, Reason: n.Reason}}
	err := s.settle(ctx, "refund", id, &res.Invoice, func(ctx context.Context, tx bun.Tx) (bool, error) {
		prior, found, err := s.store.refund(ctx, tx, n.RefundID)
		switch {
		case err != nil || !found:
			return false, err
		case prior.InvoiceID != id:
			return false, ErrRefundExists
		}
		res.Refund, res.Replayed = prior, true
		return true, nil
	}, func(ctx context.Context, tx bun.Tx) error {
		return s.recordRefund(ctx, tx, &res.Invoice, &res.Refund)
	})
	if err != nil {
		return RefundResult{}, err
	}
	return res, nil
}

// recordRefund refunds inv, locked in tx, stores ref and the invoice and emits
// invoice.refunded.
func (s *Service) recordRefund(ctx context.Context, tx bun.Tx, inv *Invoice, ref *Refund) error {
	var err error
	if ref.AmountMinor, err = inv.applyRefund(); err != nil {
		return err
	}
	if err := s.store.insertRefund(ctx, tx, ref); err != nil {
		return err
	}
	if err := s.store.updateSettlement(ctx, tx, inv); err != nil {
		return err
	}
	if err := s.emit(ctx, tx, refundedEvent(*inv, *ref), inv.EventSeq); err != nil {
		return err
	}
	return s.withLines(ctx, tx, inv)
}
