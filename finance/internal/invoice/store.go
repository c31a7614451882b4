package invoice

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
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

// insertInvoice inserts inv and its lines, filling in Seq, Number and the times.
// The number is derived from the identity value drawn in the same statement, so
// INV-000042 is always the invoice with seq 42 (a rolled-back issue leaves a gap).
func (store) insertInvoice(ctx context.Context, db bun.IDB, inv *Invoice) error {
	stmts := pgdb.Prepared(db)
	err := stmts.QueryRow(ctx, `WITH s AS (SELECT nextval(pg_get_serial_sequence('invoices', 'seq')) AS seq)
		INSERT INTO invoices (id, seq, number, customer_id, currency, total_minor, status, event_seq)
		OVERRIDING SYSTEM VALUE
		SELECT $1, s.seq, 'INV-' || lpad(s.seq::text, greatest(6, length(s.seq::text)), '0'), $2, $3, $4, $5, $6
		FROM s
		RETURNING seq, number, created_at, updated_at`,
		[]any{inv.ID, inv.CustomerID, inv.Currency, inv.TotalMinor, string(inv.Status), inv.EventSeq},
		&inv.Seq, &inv.Number, &inv.CreatedAt, &inv.UpdatedAt)
	if err != nil {
		return fmt.Errorf("insert invoice: %w", err)
	}
	if len(inv.Lines) == 0 {
		return nil
	}
	cols := lineColumns{}
	for _, l := range inv.Lines {
		cols.no = append(cols.no, int64(l.No))
		cols.description = append(cols.description, l.Description)
		cols.quantity = append(cols.quantity, l.Quantity)
		cols.unitPrice = append(cols.unitPrice, l.UnitPriceMinor)
		cols.amount = append(cols.amount, l.AmountMinor)
	}
	_, err = stmts.Exec(ctx, `INSERT INTO invoice_lines (invoice_id, line_no, description, quantity,
			unit_price_minor, amount_minor)
		SELECT $1, * FROM unnest($2::int[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[])`,
		inv.ID, cols.no, cols.description, cols.quantity, cols.unitPrice, cols.amount)
	if err != nil {
		return fmt.Errorf("insert invoice lines: %w", err)
	}
	return nil
}

// lineColumns are an invoice's lines as one array per column.
type lineColumns struct {
	no, quantity, unitPrice, amount []int64
	description                     []string
}

// invoice reads one invoice without its lines; lock takes its row lock until the
// transaction ends.
func (store) invoice(ctx context.Context, db bun.IDB, id uuid.UUID, lock bool) (Invoice, error) {
	query := selectInvoice + ` WHERE id = $1`
	if lock {
		query += ` FOR UPDATE`
	}
	var r invoiceRow
	err := pgdb.Prepared(db).QueryRow(ctx, query, []any{id}, &r.ID, &r.Seq, &r.Number, &r.CustomerID,
		&r.Currency, &r.TotalMinor, &r.PaidMinor, &r.Status, &r.EventSeq, &r.CreatedAt, &r.UpdatedAt)
	if err := oneRow(err, ErrNotFound, "select invoice"); err != nil {
		return Invoice{}, err
	}
	return r.invoice(), nil
}

// selectInvoice reads the columns of invoiceRow in its order.
const selectInvoice = `SELECT id, seq, number, customer_id, currency, total_minor, paid_minor, status,
	event_seq, created_at, updated_at FROM invoices`

// invoiceBySeq reads the invoice numbered seq (INV-<seq>) without its lines.
func (store) invoiceBySeq(ctx context.Context, db bun.IDB, seq int64) (Invoice, error) {
	var row invoiceRow
	err := db.NewSelect().Model(&row).Where("seq = ?", seq).Scan(ctx)
	if err := oneRow(err, ErrNotFound, "select invoice"); err != nil {
		return Invoice{}, err
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
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = id.String()
	}
	rows, err := pgdb.Prepared(db).Query(ctx, `SELECT invoice_id, line_no, description, quantity,
			unit_price_minor, amount_minor
		FROM invoice_lines WHERE invoice_id = ANY($1::text[]::uuid[]) ORDER BY invoice_id, line_no`, keys)
	if err != nil {
		return nil, fmt.Errorf("select invoice lines: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var l Line
		if err := rows.Scan(&id, &l.No, &l.Description, &l.Quantity, &l.UnitPriceMinor, &l.AmountMinor); err != nil {
			return nil, fmt.Errorf("select invoice lines: %w", err)
		}
		out[id] = append(out[id], l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("select invoice lines: %w", err)
	}
	return out, nil
}

// updateSettlement writes the invoice's paid amount, status and event sequence.
func (store) updateSettlement(ctx context.Context, db bun.IDB, inv *Invoice) error {
	err := pgdb.Prepared(db).QueryRow(ctx, `UPDATE invoices SET paid_minor = $1, status = $2, event_seq = $3,
			updated_at = now()
		WHERE id = $4 RETURNING updated_at`,
		[]any{inv.PaidMinor, string(inv.Status), inv.EventSeq, inv.ID}, &inv.UpdatedAt)
	if err != nil {
		return fmt.Errorf("update invoice: %w", err)
	}
	return nil
}

// payment reads the payment with id; found is false when there is none.
func (store) payment(ctx context.Context, db bun.IDB, id string) (p Payment, found bool, err error) {
	err = pgdb.Prepared(db).QueryRow(ctx, `SELECT payment_id, invoice_id, amount_minor, created_at
		FROM payments WHERE payment_id = $1`, []any{id}, &p.PaymentID, &p.InvoiceID, &p.AmountMinor, &p.CreatedAt)
	if found, err = lookedUp(err, "select payment"); !found {
		return Payment{}, false, err
	}
	return p, true, nil
}

// refund reads the refund with id; found is false when there is none.
func (store) refund(ctx context.Context, db bun.IDB, id string) (r Refund, found bool, err error) {
	err = pgdb.Prepared(db).QueryRow(ctx, `SELECT refund_id, invoice_id, amount_minor, reason, created_at
		FROM refunds WHERE refund_id = $1`, []any{id}, &r.RefundID, &r.InvoiceID, &r.AmountMinor, &r.Reason, &r.CreatedAt)
	if found, err = lookedUp(err, "select refund"); !found {
		return Refund{}, false, err
	}
	return r, true, nil
}

// insertPayment records p, filling in CreatedAt; ErrPaymentExists when its id is
// taken (by a payment of another invoice committed since Pay looked it up).
func (store) insertPayment(ctx context.Context, db bun.IDB, p *Payment) error {
	err := pgdb.Prepared(db).QueryRow(ctx, `INSERT INTO payments (payment_id, invoice_id, amount_minor)
		VALUES ($1, $2, $3) ON CONFLICT (payment_id) DO NOTHING RETURNING created_at`,
		[]any{p.PaymentID, p.InvoiceID, p.AmountMinor}, &p.CreatedAt)
	return oneRow(err, ErrPaymentExists, "insert payment")
}

// insertRefund records r, filling in CreatedAt; ErrRefundExists when its id is
// taken (by a refund of another invoice committed since Refund looked it up).
func (store) insertRefund(ctx context.Context, db bun.IDB, r *Refund) error {
	err := db.NewRaw(`INSERT INTO refunds (refund_id, invoice_id, amount_minor, reason) VALUES (?, ?, ?, ?)
		ON CONFLICT (refund_id) DO NOTHING RETURNING created_at`,
		r.RefundID, r.InvoiceID, r.AmountMinor, r.Reason).Scan(ctx, &r.CreatedAt)
	return oneRow(err, ErrRefundExists, "insert refund")
}

// oneRow reads the error of a statement that returns one row or none: none when it
// returned no row, err wrapped in what it did otherwise.
func oneRow(err, none error, what string) error {
	found, err := lookedUp(err, what)
	if err == nil && !found {
		return none
	}
	return err
}

// lookedUp reads the error of a statement that returns one row or none: whether it
// returned the row, and err wrapped in what it did when the statement failed.
func lookedUp(err error, what string) (bool, error) {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%s: %w", what, err)
	}
	return true, nil
}
