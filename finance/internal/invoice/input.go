package invoice

import (
	"cmp"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"handoff/pkg/integrationkit/wire"
)

// Limits of the inputs. What an event carries to logistics (customer, payment and
// refund ids, amounts, the currency) is checked with the rules of package wire, the
// ones logistics applies to the events it receives, so an input finance accepts never
// becomes an event logistics refuses.
const (
	// MaxAmountMinor bounds every amount, line and total (wire.MaxMinorUnits, 1e15
	// minor units), far below int64's range, so sums cannot overflow.
	MaxAmountMinor = wire.MaxMinorUnits
	// MaxLines bounds the lines of one invoice.
	MaxLines = 500
	// MaxTextLength bounds line descriptions and refund reasons, in characters; they
	// stay in finance.
	MaxTextLength = 500
	// DefaultLimit and MaxLimit bound one page of a list.
	DefaultLimit = 50
	MaxLimit     = 500
)

// NewInvoice is an invoice to issue: either Lines or TotalMinor, not both.
type NewInvoice struct {
	CustomerID string
	// Currency is an active ISO 4217 code, upper case.
	Currency string
	// Lines make up the total; nil when TotalMinor is given.
	Lines []NewLine
	// TotalMinor is the total of an invoice without lines; nil when Lines are given.
	TotalMinor *int64
}

// NewLine is one line of a NewInvoice.
type NewLine struct {
	Description    string
	Quantity       int64
	UnitPriceMinor int64
}

// NewPayment is a payment to record. PaymentID is its natural key, which makes
// retries safe: the same id again with the same invoice and amount is the payment
// already recorded, with another invoice or amount it is refused.
type NewPayment struct {
	PaymentID   string
	AmountMinor int64
}

// NewRefund is a refund to record; the amount is what was paid. RefundID is its
// natural key: the same id again for the same invoice is the refund already recorded.
type NewRefund struct {
	RefundID string
	Reason   string
}

// Filter selects a page of invoices, newest first.
type Filter struct {
	// Status and CustomerID filter when not empty.
	Status     Status
	CustomerID string
	// Limit is the page size, 1 to MaxLimit; 0 means DefaultLimit.
	Limit int
	// BeforeSeq, when positive, continues a list after the invoice with that Seq.
	BeforeSeq int64
}

// Page is one page of a list. Next, when positive, is the BeforeSeq of the next page.
type Page struct {
	Items []Invoice
	Next  int64
}

// build validates n and returns the invoice to insert, with its amounts computed.
func (n NewInvoice) build() (Invoice, error) {
	var fe fieldErrors
	fe.check("customer_id", wire.CheckID(n.CustomerID))
	if !IsCurrency(n.Currency) {
		fe.add("currency", "must be an active ISO 4217 currency code such as EUR")
	}
	lines, total := n.amounts(&fe)
	if err := fe.err(); err != nil {
		return Invoice{}, err
	}
	return Invoice{
		CustomerID: n.CustomerID, Currency: n.Currency, TotalMinor: total,
		Status: StatusIssued, EventSeq: 1, Lines: lines,
	}, nil
}

func (n NewInvoice) amounts(fe *fieldErrors) ([]Line, int64) {
	switch {
	case n.Lines != nil && n.TotalMinor != nil:
		fe.add("total_minor", "give either lines or total_minor, not both")
	case n.TotalMinor != nil:
		if *n.TotalMinor < 1 || *n.TotalMinor > MaxAmountMinor {
			fe.add("total_minor", "must be between 1 and 1e15")
		}
		return []Line{}, *n.TotalMinor
	case n.Lines == nil:
		fe.add("lines", "give lines or total_minor")
	case len(n.Lines) == 0 || len(n.Lines) > MaxLines:
		fe.add("lines", fmt.Sprintf("must have 1 to %d lines", MaxLines))
	default:
		return sumLines(n.Lines, fe)
	}
	return nil, 0
}

// sumLines computes each line's amount and the total. Every amount is bounded by
// MaxAmountMinor before it is added, so with at most MaxLines lines nothing overflows.
func sumLines(in []NewLine, fe *fieldErrors) ([]Line, int64) {
	lines := make([]Line, len(in))
	var total int64
	before := len(*fe)
	for i, l := range in {
		field := fmt.Sprintf("lines[%d]", i)
		checkText(fe, field+".description", l.Description, 1)
		if l.Quantity < 1 || l.Quantity > MaxAmountMinor {
			fe.add(field+".quantity", "must be between 1 and 1e15")
		}
		if l.UnitPriceMinor < 0 || l.UnitPriceMinor > MaxAmountMinor {
			fe.add(field+".unit_price_minor", "must be between 0 and 1e15")
		}
		amount, ok := boundedProduct(l.Quantity, l.UnitPriceMinor)
		if !ok {
			fe.add(field, "quantity × unit_price_minor exceeds 1e15")
		}
		lines[i] = Line{No: i + 1, Description: l.Description, Quantity: l.Quantity,
			UnitPriceMinor: l.UnitPriceMinor, AmountMinor: amount}
		total += amount
	}
	if len(*fe) > before {
		return lines, total
	}
	switch {
	case total > MaxAmountMinor:
		fe.add("lines", "the total exceeds 1e15")
	case total == 0:
		fe.add("lines", "the total must be greater than 0")
	}
	return lines, total
}

// boundedProduct returns q×p when both are in [0, MaxAmountMinor] and so is the
// product; otherwise 0 and false.
func boundedProduct(q, p int64) (int64, bool) {
	if q < 0 || p < 0 || q > MaxAmountMinor || p > MaxAmountMinor {
		return 0, true // reported by the range checks
	}
	if p != 0 && q > MaxAmountMinor/p {
		return 0, false
	}
	return q * p, true
}

func (p NewPayment) validate() error {
	var fe fieldErrors
	fe.check("payment_id", wire.CheckKeyID(p.PaymentID))
	if p.AmountMinor < 1 || p.AmountMinor > MaxAmountMinor {
		fe.add("amount_minor", "must be between 1 and 1e15")
	}
	return fe.err()
}

func (r NewRefund) validate() error {
	var fe fieldErrors
	fe.check("refund_id", wire.CheckKeyID(r.RefundID))
	checkText(&fe, "reason", r.Reason, 0)
	return fe.err()
}

// normalize validates f and fills in the default limit. Field names are the list's
// query parameters.
func (f *Filter) normalize() error {
	var fe fieldErrors
	if f.Status != "" && !f.Status.Valid() {
		fe.add("status", "must be one of issued, partially_paid, paid, refunded")
	}
	if f.CustomerID != "" {
		fe.check("customer", wire.CheckID(f.CustomerID))
	}
	if f.Limit < 0 || f.Limit > MaxLimit {
		fe.add("limit", fmt.Sprintf("must be between 1 and %d", MaxLimit))
	}
	if f.BeforeSeq < 0 {
		fe.add("cursor", "is not a cursor of this list")
	}
	f.Limit = cmp.Or(f.Limit, DefaultLimit)
	return fe.err()
}

// checkText accepts min to MaxTextLength characters without control characters
// (NUL among them, which PostgreSQL text cannot hold).
func checkText(fe *fieldErrors, field, s string, min int) {
	switch n := utf8.RuneCountInString(s); {
	case !utf8.ValidString(s):
		fe.add(field, "must be valid UTF-8")
	case n < min || n > MaxTextLength:
		fe.add(field, fmt.Sprintf("must be %d to %d characters", min, MaxTextLength))
	case strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) }) >= 0:
		fe.add(field, "must not contain control characters")
	}
}
