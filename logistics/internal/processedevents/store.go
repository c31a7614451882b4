package processedevents

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Store reads the processed-events record.
type Store struct {
	db *bun.DB
}

// NewStore returns the store over db, the logistics database.
func NewStore(db *bun.DB) *Store { return &Store{db: db} }

type row struct {
	bun.BaseModel `bun:"table:logistics_processed_events"`

	IdempotencyKey string    `bun:"idempotency_key"`
	EventID        string    `bun:"event_id"`
	EventType      string    `bun:"event_type"`
	InvoiceID      uuid.UUID `bun:"invoice_id,type:uuid,nullzero"`
	Result         string    `bun:"result"`
	ReceivedAt     time.Time `bun:"received_at"`
}

// List returns a page of the processed events matching f, oldest first.
func (s *Store) List(ctx context.Context, f Filter) (Page, error) {
	if err := f.normalize(); err != nil {
		return Page{}, err
	}
	var rows []row
	q := s.db.NewSelect().Model(&rows).
		Column("idempotency_key", "event_id", "event_type", "invoice_id", "result", "received_at").
		OrderExpr("received_at, idempotency_key").Limit(int64(f.Limit) + 1)
	if f.InvoiceID != uuid.Nil {
		q = q.Where("invoice_id = ?", f.InvoiceID)
	}
	if !f.From.IsZero() {
		q = q.Where("received_at >= ?", f.From)
	}
	if !f.To.IsZero() {
		q = q.Where("received_at < ?", f.To)
	}
	if f.After != nil {
		q = q.Where("(received_at, idempotency_key) > (?, ?)", f.After.ReceivedAt, f.After.Key)
	}
	if err := q.Scan(ctx); err != nil {
		return Page{}, fmt.Errorf("list processed events: %w", err)
	}
	var page Page
	if len(rows) > f.Limit {
		rows = rows[:f.Limit]
		last := rows[f.Limit-1]
		page.Next = &Cursor{ReceivedAt: last.ReceivedAt, Key: last.IdempotencyKey}
	}
	page.Items = make([]Event, len(rows))
	for i, r := range rows {
		page.Items[i] = r.event()
	}
	return page, nil
}

func (r row) event() Event {
	return Event{IdempotencyKey: r.IdempotencyKey, EventID: r.EventID, EventType: r.EventType,
		InvoiceID: r.InvoiceID, Result: r.Result, ReceivedAt: r.ReceivedAt}
}
