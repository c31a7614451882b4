package invoice

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// store holds every SQL statement of the domain. Its methods take the bun.IDB to
// run on, so they join the caller's transaction.
type store struct{}

type invoiceRow struct {
	bun.BaseModel `bun:"table:invoices"`

	ID         uuid.UUID `bun:"id,pk"`
	Seq        int64     `bun:"seq"`
	Number     string    `bun:"number"`
	CustomerID string    `bun:"customer_id"`
	Currency   string    `bun:"currency"`
	TotalMinor int64     `bun:"total_minor"`
	PaidMinor  int64     `bun:"paid_minor"`
	Status     Status    `bun:"status"`
	EventSeq   int64     `bun:"event_seq"`
	CreatedAt  time.Time `bun:"created_at"`
	UpdatedAt  time.Time `bun:"updated_at"`
}

func (r invoiceRow) invoice() Invoice {
	return Invoice{
		ID: r.ID, Seq: r.Seq, Number: r.Number, CustomerID: r.CustomerID, Currency: r.Currency,
		TotalMinor: r.TotalMinor, PaidMinor: r.PaidMinor, Status: r.Status, EventSeq: r.EventSeq,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

type lineRow struct {
	bun.BaseModel `bun:"table:invoice_lines"`

	InvoiceID      uuid.UUID `bun:"invoice_id,pk"`
	LineNo         int       `bun:"line_no,pk"`
	Description    string    `bun:"description"`
	Quantity       int64     `bun:"quantity"`
	UnitPriceMinor int64     `bun:"unit_price_minor"`
	AmountMinor    int64     `bun:"amount_minor"`
}

// insertInvoice inserts inv and its lines, filling in Seq, Number and the times.
// The number is derived from the identity value drawn in the same statement, so
// INV-000042 is always the invoice with seq 42 (a rolled-back issue leaves a gap).
func (store) insertInvoice(ctx context.Context, db bun.IDB, inv *Invoice) error {
	err := db.NewRaw(`WITH s AS (SELECT nextval(pg_get_serial_sequence('invoices', 'seq')) AS seq)
		INSERT INTO invoices (id, seq, number, customer_id, currency, total_minor, status, event_seq)
		OVERRIDING SYSTEM VALUE
		SELECT ?, s.seq, 'INV-' || lpad(s.seq::text, greatest(6, length(s.seq::text)), '0'), ?, ?, ?, ?, ?
		FROM s
		RETURNING seq, number, created_at, updated_at`,
		inv.ID, inv.CustomerID, inv.Currency, inv.TotalMinor, inv.Status, inv.EventSeq).
		Scan(ctx, &inv.Seq, &inv.Number, &inv.CreatedAt, &inv.UpdatedAt)
	if err != nil {
		return fmt.Errorf("insert invoice: %w", err)
	}
	if len(inv.Lines) == 0 {
		return nil
	}
	rows := make([]lineRow, len(inv.Lines))
	for i, l := range inv.Lines {
		rows[i] = lineRow{InvoiceID: inv.ID, LineNo: l.No, Description: l.Description,
			Quantity: l.Quantity, UnitPriceMinor: l.UnitPriceMinor, AmountMinor: l.AmountMinor}
	}
	if _, err := db.NewInsert().Model(&rows).Exec(ctx); err != nil {
		return fmt.Errorf("insert invoice lines: %w", err)
	}
	return nil
}

// invoice reads one invoice without its lines; lock takes its row lock until the
// transaction ends.
func (store) invoice(ctx context.Context, db bun.IDB, id uuid.UUID, lock bool) (Invoice, error) {
	var row invoiceRow
	q := db.NewSelect().Model(&row).Where("id = ?", id)
	if lock {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Invoice{}, ErrNotFound
		}
		return Invoice{}, fmt.Errorf("select invoice: %w", err)
	}
	return row.invoice(), nil
}

// invoiceBySeq reads the invoice numbered seq (INV-<seq>) without its lines.
func (store) invoiceBySeq(ctx context.Context, db bun.IDB, seq int64) (Invoice, error) {
	var row invoiceRow
	if err := db.NewSelect().Model(&row).Where("seq = ?", seq).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Invoice{}, ErrNotFound
		}
		return Invoice{}, fmt.Errorf("select invoice: %w", err)
	}
	return row.invoice(), nil
}

// list reads up to f.Limit+1 invoices matching f, newest first, without lines;
// the extra one tells the caller whether another page follows.
func (store) list(ctx context.Context, db bun.IDB, f Filter) ([]Invoice, error) {
	var rows []invoiceRow
	q := db.NewSelect().Model(&rows).OrderExpr("seq DESC").Limit(int64(f.Limit) + 1)
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.CustomerID != "" {
		q = q.Where("customer_id = ?", f.CustomerID)
	}
	if f.BeforeSeq > 0 {
		q = q.Where("seq < ?", f.BeforeSeq)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list invoices: %w", err)
	}
	out := make([]Invoice, len(rows))
	for i, r := range rows {
		out[i] = r.invoice()
	}
	return out, nil
}

// lines reads the lines of the given invoices, in line order, by invoice id.
func (store) lines(ctx context.Context, db bun.IDB, ids ...uuid.UUID) (map[uuid.UUID][]Line, error) {
	out := make(map[uuid.UUID][]Line, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []lineRow
	err := db.NewSelect().Model(&rows).Where("invoice_id IN (?)", bun.List(ids)).
		OrderExpr("invoice_id, line_no").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("select invoice lines: %w", err)
	}
	for _, r := range rows {
		out[r.InvoiceID] = append(out[r.InvoiceID], Line{No: r.LineNo, Description: r.Description,
			Quantity: r.Quantity, UnitPriceMinor: r.UnitPriceMinor, AmountMinor: r.AmountMinor})
	}
	return out, nil
}

// updateSettlement writes the invoice's paid amount, status and event sequence.
func (store) updateSettlement(ctx context.Context, db bun.IDB, inv *Invoice) error {
	err := db.NewRaw(`UPDATE invoices SET paid_minor = ?, status = ?, event_seq = ?, updated_at = now()
		WHERE id = ? RETURNING updated_at`,
		inv.PaidMinor, inv.Status, inv.EventSeq, inv.ID).Scan(ctx, &inv.UpdatedAt)
	if err != nil {
		return fmt.Errorf("update invoice: %w", err)
	}
	return nil
}

// insertPayment records p, filling in CreatedAt; ErrPaymentExists when its id is taken.
func (store) insertPayment(ctx context.Context, db bun.IDB, p *Payment) error {
	err := db.NewRaw(`INSERT INTO payments (payment_id, invoice_id, amount_minor) VALUES (?, ?, ?)
		ON CONFLICT (payment_id) DO NOTHING RETURNING created_at`,
		p.PaymentID, p.InvoiceID, p.AmountMinor).Scan(ctx, &p.CreatedAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrPaymentExists
	case err != nil:
		return fmt.Errorf("insert payment: %w", err)
	}
	return nil
}

// insertRefund records r, filling in CreatedAt; ErrRefundExists when its id is taken.
func (store) insertRefund(ctx context.Context, db bun.IDB, r *Refund) error {
	err := db.NewRaw(`INSERT INTO refunds (refund_id, invoice_id, amount_minor, reason) VALUES (?, ?, ?, ?)
		ON CONFLICT (refund_id) DO NOTHING RETURNING created_at`,
		r.RefundID, r.InvoiceID, r.AmountMinor, r.Reason).Scan(ctx, &r.CreatedAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrRefundExists
	case err != nil:
		return fmt.Errorf("insert refund: %w", err)
	}
	return nil
}
