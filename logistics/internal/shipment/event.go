package shipment

import "github.com/google/uuid"

// EventType names an invoice event published by finance.
type EventType string

// Invoice events that move shipments.
const (
	InvoiceIssued   EventType = "invoice.issued"
	InvoicePaid     EventType = "invoice.paid"
	InvoiceRefunded EventType = "invoice.refunded"
)

// Valid reports whether t is an event logistics understands.
func (t EventType) Valid() bool {
	return t == InvoiceIssued || t == InvoicePaid || t == InvoiceRefunded
}

// Event is an invoice event as far as shipments are concerned.
type Event struct {
	Type          EventType
	InvoiceID     uuid.UUID
	InvoiceNumber string
	CustomerID    string
	// Sequence is the event's 1-based position among its invoice's events.
	Sequence       int64
	IdempotencyKey string
}

// Result says what an event did; it is stored with the processed event.
type Result string

// Results of applying an event.
const (
	// ResultApplied: the event created or moved the shipment.
	ResultApplied Result = "applied"
	// ResultStale: the shipment already reflects a later event; nothing changed.
	ResultStale Result = "stale"
	// ResultIgnored: the event is new but has no effect in the shipment's state
	// (e.g. a refund of an already cancelled shipment); only its sequence is kept.
	ResultIgnored Result = "ignored"
)

// decision is what an event does to a shipment (nil when there is none yet).
type decision struct {
	result Result
	to     State // set when result is ResultApplied
}

// decide is the event half of the state machine.
func decide(cur *Shipment, ev Event) (decision, error) {
	if cur == nil {
		switch ev.Type {
		case InvoiceIssued:
			return decision{ResultApplied, AwaitingPayment}, nil
		case InvoicePaid:
			return decision{ResultApplied, Waiting}, nil
		default:
			return decision{}, ErrNotYetApplicable
		}
	}
	if ev.Sequence <= cur.LastEventSeq {
		return decision{result: ResultStale}, nil
	}
	switch {
	case ev.Type == InvoicePaid && cur.State == AwaitingPayment:
		return decision{ResultApplied, Waiting}, nil
	case ev.Type == InvoiceRefunded && beforeShipping(cur.State):
		return decision{ResultApplied, Cancelled}, nil
	case ev.Type == InvoiceRefunded && (cur.State == Shipped || cur.State == Delivered):
		return decision{ResultApplied, ReturnPending}, nil
	default:
		return decision{result: ResultIgnored}, nil
	}
}

func beforeShipping(s State) bool {
	return s == AwaitingPayment || s == Waiting || s == Picking || s == Packed
}
