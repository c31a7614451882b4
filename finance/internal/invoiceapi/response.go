package invoiceapi

import (
	"time"

	"handoff/finance/internal/invoice"
)

// The response shapes; field names are part of the contract (docs/contract.md).

type invoiceJSON struct {
	ID           string     `json:"id"`
	Number       string     `json:"number"`
	Status       string     `json:"status"`
	Currency     string     `json:"currency"`
	TotalMinor   int64      `json:"total_minor"`
	PaidMinor    int64      `json:"paid_minor"`
	BalanceMinor int64      `json:"balance_minor"`
	CustomerID   string     `json:"customer_id"`
	Lines        []lineJSON `json:"lines"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
}

type lineJSON struct {
	LineNo         int    `json:"line_no"`
	Description    string `json:"description"`
	Quantity       int64  `json:"quantity"`
	UnitPriceMinor int64  `json:"unit_price_minor"`
	AmountMinor    int64  `json:"amount_minor"`
}

type paymentJSON struct {
	PaymentID   string    `json:"payment_id"`
	InvoiceID   string    `json:"invoice_id"`
	AmountMinor int64     `json:"amount_minor"`
	CreatedAt   time.Time `json:"created_at"`
}

type refundJSON struct {
	RefundID    string    `json:"refund_id"`
	InvoiceID   string    `json:"invoice_id"`
	AmountMinor int64     `json:"amount_minor"`
	Reason      string    `json:"reason"`
	CreatedAt   time.Time `json:"created_at"`
}

type paymentResultJSON struct {
	Invoice invoiceJSON `json:"invoice"`
	Payment paymentJSON `json:"payment"`
}

type refundResultJSON struct {
	Invoice invoiceJSON `json:"invoice"`
	Refund  refundJSON  `json:"refund"`
}

type listJSON struct {
	Items      []invoiceJSON `json:"items"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

func newInvoiceJSON(inv invoice.Invoice) invoiceJSON {
	lines := make([]lineJSON, len(inv.Lines))
	for i, l := range inv.Lines {
		lines[i] = lineJSON{LineNo: l.No, Description: l.Description, Quantity: l.Quantity,
			UnitPriceMinor: l.UnitPriceMinor, AmountMinor: l.AmountMinor}
	}
	return invoiceJSON{
		ID: inv.ID.String(), Number: inv.Number, Status: string(inv.Status), Currency: inv.Currency,
		TotalMinor: inv.TotalMinor, PaidMinor: inv.PaidMinor, BalanceMinor: inv.Balance(),
		CustomerID: inv.CustomerID, Lines: lines,
		CreatedAt: inv.CreatedAt.UTC(), UpdatedAt: inv.UpdatedAt.UTC(),
	}
}

func newPaymentJSON(p invoice.Payment) paymentJSON {
	return paymentJSON{PaymentID: p.PaymentID, InvoiceID: p.InvoiceID.String(),
		AmountMinor: p.AmountMinor, CreatedAt: p.CreatedAt.UTC()}
}

func newRefundJSON(r invoice.Refund) refundJSON {
	return refundJSON{RefundID: r.RefundID, InvoiceID: r.InvoiceID.String(),
		AmountMinor: r.AmountMinor, Reason: r.Reason, CreatedAt: r.CreatedAt.UTC()}
}
