package invoice

import (
	"context"
	"fmt"
	"net/url"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/outbox"
	"handoff/pkg/integrationkit/pgdb"
)

// OutboxTable is the outbox the service writes its events to.
const OutboxTable = "finance_outbox"

// Config configures a Service.
type Config struct {
	// Destination is the URL the invoice events are delivered to
	// (LOGISTICS_WEBHOOK_URL).
	Destination string
}

// Validate reports a missing or malformed field.
func (c Config) Validate() error {
	u, err := url.Parse(c.Destination)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("invoice: Destination %q is not an absolute http(s) URL", c.Destination)
	}
	return nil
}

// Service issues invoices and records their payments and refunds. Each change and
// the event it causes commit in one transaction, or neither does.
type Service struct {
	db          *bun.DB
	store       store
	outbox      *outbox.Store
	destination string
}

// NewService returns the service over db, the finance database.
func NewService(db *bun.DB, cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ob, err := outbox.NewStore(OutboxTable)
	if err != nil {
		return nil, fmt.Errorf("invoice: %w", err)
	}
	return &Service{db: db, outbox: ob, destination: cfg.Destination}, nil
}

// Issue validates n, stores the invoice with the next number and emits
// invoice.issued as the invoice's event 1.
func (s *Service) Issue(ctx context.Context, n NewInvoice) (Invoice, error) {
	inv, err := n.build()
	if err != nil {
		return Invoice{}, err
	}
	if inv.ID, err = uuid.NewV7(); err != nil {
		return Invoice{}, fmt.Errorf("issue invoice: new id: %w", err)
	}
	err = pgdb.RunInTx(ctx, s.db, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := s.store.insertInvoice(ctx, tx, &inv); err != nil {
			return err
		}
		return s.emit(ctx, tx, issuedEvent(inv), inv.EventSeq)
	})
	if err != nil {
		return Invoice{}, fmt.Errorf("issue invoice: %w", err)
	}
	return inv, nil
}

// Get returns the invoice with its lines, or ErrNotFound.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (Invoice, error) {
	inv, err := s.store.invoice(ctx, s.db, id, false)
	if err != nil {
		return Invoice{}, fmt.Errorf("get invoice: %w", err)
	}
	if err := s.withLines(ctx, s.db, &inv); err != nil {
		return Invoice{}, fmt.Errorf("get invoice: %w", err)
	}
	return inv, nil
}

// List returns a page of invoices matching f, newest first, with their lines.
func (s *Service) List(ctx context.Context, f Filter) (Page, error) {
	if err := f.normalize(); err != nil {
		return Page{}, err
	}
	items, err := s.store.list(ctx, s.db, f)
	if err != nil {
		return Page{}, err
	}
	var page Page
	if len(items) > f.Limit {
		items = items[:f.Limit]
		page.Next = items[f.Limit-1].Seq
	}
	ids := make([]uuid.UUID, len(items))
	for i, inv := range items {
		ids[i] = inv.ID
	}
	lines, err := s.store.lines(ctx, s.db, ids...)
	if err != nil {
		return Page{}, err
	}
	for i := range items {
		items[i].Lines = nonNil(lines[items[i].ID])
	}
	page.Items = items
	return page, nil
}

func (s *Service) withLines(ctx context.Context, db bun.IDB, inv *Invoice) error {
	lines, err := s.store.lines(ctx, db, inv.ID)
	if err != nil {
		return err
	}
	inv.Lines = nonNil(lines[inv.ID])
	return nil
}

// nonNil makes an invoice without lines carry an empty list rather than none.
func nonNil(lines []Line) []Line {
	if lines == nil {
		return []Line{}
	}
	return lines
}
