package invoice

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/outbox"
)

// Event types finance emits; logistics acts on them.
const (
	EventIssued   = "invoice.issued"
	EventPaid     = "invoice.paid"
	EventRefunded = "invoice.refunded"
)

// EventData is the data of every invoice event. PaymentID and RefundID are set on
// the events they apply to, AmountMinor is the payment's or refund's amount.
type EventData struct {
	InvoiceID     string `json:"invoice_id"`
	InvoiceNumber string `json:"invoice_number"`
	CustomerID    string `json:"customer_id"`
	Currency      string `json:"currency"`
	TotalMinor    int64  `json:"total_minor"`
	PaidMinor     int64  `json:"paid_minor"`
	Status        Status `json:"status"`
	PaymentID     string `json:"payment_id,omitempty"`
	RefundID      string `json:"refund_id,omitempty"`
	AmountMinor   int64  `json:"amount_minor,omitempty"`
}

// event is one invoice event before it is handed to the outbox.
type event struct {
	typ string
	// ref is the payment or refund id that makes the key unique; empty for issued.
	ref  string
	data EventData
}

func newEvent(typ string, inv Invoice) event {
	return event{typ: typ, data: EventData{
		InvoiceID: inv.ID.String(), InvoiceNumber: inv.Number, CustomerID: inv.CustomerID,
		Currency: inv.Currency, TotalMinor: inv.TotalMinor, PaidMinor: inv.PaidMinor, Status: inv.Status,
	}}
}

func issuedEvent(inv Invoice) event { return newEvent(EventIssued, inv) }

func paidEvent(inv Invoice, p Payment) event {
	ev := newEvent(EventPaid, inv)
	ev.ref, ev.data.PaymentID, ev.data.AmountMinor = p.PaymentID, p.PaymentID, p.AmountMinor
	return ev
}

func refundedEvent(inv Invoice, r Refund) event {
	ev := newEvent(EventRefunded, inv)
	ev.ref, ev.data.RefundID, ev.data.AmountMinor = r.RefundID, r.RefundID, r.AmountMinor
	return ev
}

// idempotencyKey is the event's stable delivery key, e.g.
// invoice.paid:<invoice_id>:<payment_id>; one business fact, one key.
func (ev event) idempotencyKey() string {
	if ev.ref == "" {
		return ev.typ + ":" + ev.data.InvoiceID
	}
	return ev.typ + ":" + ev.data.InvoiceID + ":" + ev.ref
}

// emit writes ev to the outbox in tx as the invoice's event number seq. The caller
// holds the invoice's row lock, so sequences are assigned in commit order.
func (s *Service) emit(ctx context.Context, tx bun.IDB, ev event, seq int64) error {
	_, err := s.outbox.Enqueue(ctx, tx, outbox.Event{
		Type:           ev.typ,
		AggregateKey:   ev.data.InvoiceID,
		Sequence:       seq,
		IdempotencyKey: ev.idempotencyKey(),
		Destination:    s.destination,
		Payload:        ev.data,
		CorrelationID:  logging.CorrelationID(ctx),
	})
	if err != nil {
		return fmt.Errorf("emit %s: %w", ev.typ, err)
	}
	return nil
}
