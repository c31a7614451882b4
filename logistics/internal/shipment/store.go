package shipment

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

// row is a shipments row.
type row struct {
	bun.BaseModel `bun:"table:shipments"`

	ID            uuid.UUID `bun:"id,pk,type:uuid"`
	Seq           int64     `bun:"seq"`
	InvoiceID     uuid.UUID `bun:"invoice_id,type:uuid"`
	InvoiceNumber string    `bun:"invoice_number"`
	CustomerID    string    `bun:"customer_id"`
	State         string    `bun:"state"`
	Version       int64     `bun:"version"`
	LastEventSeq  int64     `bun:"last_event_seq"`
	CreatedAt     time.Time `bun:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at"`
}

func (r row) shipment() Shipment {
	return Shipment{
		ID: r.ID, Seq: r.Seq, InvoiceID: r.InvoiceID, InvoiceNumber: r.InvoiceNumber,
		CustomerID: r.CustomerID, State: State(r.State), Version: r.Version,
		LastEventSeq: r.LastEventSeq, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// historyRow is a shipment_history row.
type historyRow struct {
	bun.BaseModel `bun:"table:shipment_history"`

	ShipmentID     uuid.UUID `bun:"shipment_id,type:uuid"`
	FromState      string    `bun:"from_state,nullzero"`
	ToState        string    `bun:"to_state"`
	Version        int64     `bun:"version"`
	Cause          string    `bun:"cause"`
	IdempotencyKey string    `bun:"idempotency_key,nullzero"`
	At             time.Time `bun:"at"`
}

// store holds the SQL of shipments; every method runs on the db or tx it is given.
type store struct{}

// lockByID returns the shipment locked for update, or ErrNotFound.
func (store) lockByID(ctx context.Context, db bun.IDB, id uuid.UUID) (Shipment, error) {
	var r row
	err := db.NewSelect().Model(&r).Where("id = ?", id).For("UPDATE").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Shipment{}, ErrNotFound
	}
	if err != nil {
		return Shipment{}, fmt.Errorf("lock shipment %s: %w", id, err)
	}
	return r.shipment(), nil
}

// update writes s's state, version and last event sequence and returns the row.
func (store) update(ctx context.Context, db bun.IDB, s Shipment) (Shipment, error) {
	r := row{ID: s.ID, State: string(s.State), Version: s.Version, LastEventSeq: s.LastEventSeq}
	_, err := db.NewUpdate().Model(&r).
		Column("state", "version", "last_event_seq").
		Set("updated_at = now()").
		WherePK().
		Returning("*").
		Exec(ctx)
	if err != nil {
		return Shipment{}, fmt.Errorf("update shipment %s: %w", s.ID, err)
	}
	return r.shipment(), nil
}

func (store) get(ctx context.Context, db bun.IDB, id uuid.UUID) (Shipment, error) {
	var r row
	err := db.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Shipment{}, ErrNotFound
	}
	if err != nil {
		return Shipment{}, fmt.Errorf("get shipment %s: %w", id, err)
	}
	return r.shipment(), nil
}

func (store) history(ctx context.Context, db bun.IDB, id uuid.UUID) ([]Change, error) {
	var rows []historyRow
	err := db.NewSelect().Model(&rows).Where("shipment_id = ?", id).OrderExpr("id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("history of shipment %s: %w", id, err)
	}
	out := make([]Change, 0, len(rows))
	for _, h := range rows {
		out = append(out, Change{
			From: State(h.FromState), To: State(h.ToState), Version: h.Version,
			Cause: h.Cause, IdempotencyKey: h.IdempotencyKey, At: h.At,
		})
	}
	return out, nil
}

// list returns up to limit shipments matching f with seq above f.After, by seq.
func (store) list(ctx context.Context, db bun.IDB, f Filter, limit int) ([]Shipment, error) {
	var rows []row
	q := db.NewSelect().Model(&rows).Where("seq > ?", f.After).OrderExpr("seq").Limit(int64(limit))
	if f.State != "" {
		q = q.Where("state = ?", string(f.State))
	}
	if f.InvoiceID != uuid.Nil {
		q = q.Where("invoice_id = ?", f.InvoiceID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list shipments: %w", err)
	}
	out := make([]Shipment, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.shipment())
	}
	return out, nil
}

// lockInvoices takes the transaction-level advisory lock of each invoice, in the order
// of the lock keys, so that concurrent callers queue in one order and never deadlock
// on these locks. Every event application takes them before it reads or creates a
// shipment: whoever holds an invoice's lock is the only one that may create its
// shipment, so a read under the lock that finds none stays true until the insert.
// The read must be a later statement than this one: a statement's snapshot predates
// the locks it waits for. It may share the round trip: the lock is queued, and
// through a pgdb.Pipe travels with the read, whose snapshot is taken when it starts.
func (store) lockInvoices(ctx context.Context, r pgdb.Runner, invoiceIDs []uuid.UUID) error {
	return r.Queue(ctx, "lock invoices", sqlLockInvoices, invoiceIDs)
}

// The statements of an event application (ApplyEvents) have a fixed text whatever
// the number of events, their values passed as arrays, so pgx prepares each once per
// connection (pgdb.Runner) and its plan is reused; bun would write every value into
// the text, parsed and planned anew each time.
const (
	sqlLockInvoices = `SELECT pg_advisory_xact_lock(k) FROM (
		SELECT DISTINCT hashtextextended('shipment-invoice:' || id, 0) AS k
		FROM unnest($1::uuid[]) AS id ORDER BY k) AS locks`
	sqlLockByInvoices = `SELECT id, seq, invoice_id, invoice_number, customer_id, state, version, last_event_seq,
		created_at, updated_at FROM shipments WHERE invoice_id = ANY($1::uuid[]) ORDER BY invoice_id FOR UPDATE`
	sqlInsertShipments = `INSERT INTO shipments (id, invoice_id, invoice_number, customer_id, state, version, last_event_seq)
		SELECT id, invoice_id, invoice_number, customer_id, state, version, last_event_seq
		FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[])
		WITH ORDINALITY AS v (id, invoice_id, invoice_number, customer_id, state, version, last_event_seq, n)
		ORDER BY n`
	sqlUpdateStates = `UPDATE shipments AS s SET state = v.state, version = v.version,
		last_event_seq = v.last_event_seq, updated_at = now()
		FROM unnest($1::uuid[], $2::text[], $3::bigint[], $4::bigint[]) AS v (id, state, version, last_event_seq)
		WHERE s.id = v.id`
	sqlAddChanges = `INSERT INTO shipment_history (shipment_id, from_state, to_state, version, cause, idempotency_key)
		SELECT shipment_id, NULLIF(from_state, ''), to_state, version, cause, NULLIF(idempotency_key, '')
		FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[])
		WITH ORDINALITY AS v (shipment_id, from_state, to_state, version, cause, idempotency_key, n)
		ORDER BY n`
)

// lockByInvoices returns the existing shipments of the invoices, locked for update in
// invoice order.
func (store) lockByInvoices(ctx context.Context, r pgdb.Runner, invoiceIDs []uuid.UUID) ([]Shipment, error) {
	var out []Shipment
	err := r.Each(ctx, sqlLockByInvoices, []any{invoiceIDs}, func(scan func(...any) error) error {
		var s Shipment
		var state string
		if err := scan(&s.ID, &s.Seq, &s.InvoiceID, &s.InvoiceNumber, &s.CustomerID, &state, &s.Version,
			&s.LastEventSeq, &s.CreatedAt, &s.UpdatedAt); err != nil {
			return err
		}
		s.State = State(state)
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lock shipments of %d invoices: %w", len(invoiceIDs), err)
	}
	return out, nil
}

// insertShipments creates shipments in one statement, in the order given; it is
// queued, as are the other writes of an event application.
func (store) insertShipments(ctx context.Context, r pgdb.Runner, ss []Shipment) error {
	if len(ss) == 0 {
		return nil
	}
	n := len(ss)
	ids, invoices := make([]uuid.UUID, n), make([]uuid.UUID, n)
	numbers, customers, states := make([]string, n), make([]string, n), make([]string, n)
	versions, seqs := make([]int64, n), make([]int64, n)
	for i, s := range ss {
		ids[i], invoices[i], numbers[i], customers[i] = s.ID, s.InvoiceID, s.InvoiceNumber, s.CustomerID
		states[i], versions[i], seqs[i] = string(s.State), s.Version, s.LastEventSeq
	}
	return r.Queue(ctx, fmt.Sprintf("create %d shipments", n), sqlInsertShipments,
		ids, invoices, numbers, customers, states, versions, seqs)
}

// updateStates writes the state, version and last event sequence of shipments in one
// statement.
func (store) updateStates(ctx context.Context, r pgdb.Runner, ss []Shipment) error {
	if len(ss) == 0 {
		return nil
	}
	n := len(ss)
	ids, states, versions, seqs := make([]uuid.UUID, n), make([]string, n), make([]int64, n), make([]int64, n)
	for i, s := range ss {
		ids[i], states[i], versions[i], seqs[i] = s.ID, string(s.State), s.Version, s.LastEventSeq
	}
	return r.Queue(ctx, fmt.Sprintf("update %d shipments", n), sqlUpdateStates, ids, states, versions, seqs)
}

// change is a history row to add to a shipment.
type change struct {
	shipmentID uuid.UUID
	Change
}

// addChanges appends history rows in one statement, in the order given (which is
// the order of their ids, and so of the history).
func (store) addChanges(ctx context.Context, r pgdb.Runner, cs []change) error {
	if len(cs) == 0 {
		return nil
	}
	n := len(cs)
	ids, from, to, causes, keys := make([]uuid.UUID, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	versions := make([]int64, n)
	for i, c := range cs {
		ids[i], from[i], to[i], versions[i], causes[i], keys[i] = c.shipmentID, string(c.From), string(c.To), c.Version, c.Cause, c.IdempotencyKey
	}
	return r.Queue(ctx, fmt.Sprintf("record %d history rows", n), sqlAddChanges,
		ids, from, to, versions, causes, keys)
}
