// Package invoice is finance's invoice domain: issuing invoices, recording payments
// and refunds, and handing the resulting events to the outbox in the same
// transaction as the change they describe.
//
// An invoice moves issued → partially_paid → paid → refunded. Every change of an
// invoice runs under its row lock (SELECT … FOR UPDATE), which is also what orders
// its events: each event takes the next per-invoice sequence number.
package invoice

import (
	"time"

	"github.com/google/uuid"
)

// Status is where an invoice stands.
type Status string

// The statuses of an invoice.
const (
	StatusIssued        Status = "issued"
	StatusPartiallyPaid Status = "partially_paid"
	StatusPaid          Status = "paid"
	StatusRefunded      Status = "refunded"
)

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusIssued, StatusPartiallyPaid, StatusPaid, StatusRefunded:
		return true
	}
	return false
}

// Invoice is an issued invoice. Amounts are integer minor units of Currency.
type Invoice struct {
	ID uuid.UUID
	// Seq is the invoice's position in issue order; lists page on it.
	Seq        int64
	Number     string
	CustomerID string
	Currency   string
	TotalMinor int64
	PaidMinor  int64
	Status     Status
	// EventSeq is the sequence of the invoice's latest event.
	EventSeq  int64
	Lines     []Line
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Balance is what remains to be paid.
func (inv Invoice) Balance() int64 { return inv.TotalMinor - inv.PaidMinor }

// Line is one line of an invoice; AmountMinor = Quantity × UnitPriceMinor.
type Line struct {
	// No is the 1-based position of the line.
	No             int
	Description    string
	Quantity       int64
	UnitPriceMinor int64
	AmountMinor    int64
}

// Payment is money received against an invoice. PaymentID is unique across invoices.
type Payment struct {
	PaymentID   string
	InvoiceID   uuid.UUID
	AmountMinor int64
	CreatedAt   time.Time
}

// Refund returns a paid invoice's money. RefundID is unique across invoices.
type Refund struct {
	RefundID    string
	InvoiceID   uuid.UUID
	AmountMinor int64
	Reason      string
	CreatedAt   time.Time
}

// applyPayment adds amount to the invoice. It reports whether the invoice became
// fully paid, in which case the invoice's event sequence is advanced for the event.
func (inv *Invoice) applyPayment(amount int64) (settled bool, err error) {
	if inv.Status == StatusPaid || inv.Status == StatusRefunded {
		return false, ErrAlreadyPaid
	}
	if amount > inv.Balance() {
		return false, ErrAmountExceedsBalance
	}
	inv.PaidMinor += amount
	if inv.PaidMinor < inv.TotalMinor {
		inv.Status = StatusPartiallyPaid
		return false, nil
	}
	inv.Status = StatusPaid
	inv.EventSeq++
	return true, nil
}

// applyRefund refunds a paid invoice in full, advances its event sequence and
// returns the amount refunded.
func (inv *Invoice) applyRefund() (int64, error) {
	switch inv.Status {
	case StatusPaid:
	case StatusRefunded:
		return 0, ErrAlreadyRefunded
	default:
		return 0, ErrNotPaid
	}
	inv.Status = StatusRefunded
	inv.EventSeq++
	return inv.PaidMinor, nil
}
