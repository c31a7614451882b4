package shipment

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Service moves shipments. Event application joins the caller's transaction (the
// inbox's); warehouse moves and reads run on the service's database.
type Service struct {
	db    *bun.DB
	store store
}

// NewService returns the service over db.
func NewService(db *bun.DB) *Service {
	return &Service{db: db}
}

// ApplyEvent applies ev to its invoice's shipment inside tx, creating the shipment
// when ev is the first event seen. It returns ErrNotYetApplicable, changing nothing,
// when ev needs a shipment that does not exist yet.
func (s *Service) ApplyEvent(ctx context.Context, tx bun.IDB, ev Event) (Result, error) {
	cur, err := s.store.lockByInvoice(ctx, tx, ev.InvoiceID)
	if err != nil {
		return "", err
	}
	if cur == nil {
		res, ok, err := s.create(ctx, tx, ev)
		if err != nil || ok {
			return res, err
		}
		// Another transaction created the shipment after our look-up and has
		// committed; decide again against its row.
		if cur, err = s.store.lockByInvoice(ctx, tx, ev.InvoiceID); err != nil {
			return "", err
		}
		if cur == nil {
			return "", fmt.Errorf("shipment of invoice %s vanished after a conflicting insert", ev.InvoiceID)
		}
	}
	return s.applyTo(ctx, tx, *cur, ev)
}

// create makes the invoice's shipment from its first event; ok is false when another
// transaction created it first.
func (s *Service) create(ctx context.Context, tx bun.IDB, ev Event) (Result, bool, error) {
	d, err := decide(nil, ev)
	if err != nil {
		return "", false, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return "", false, fmt.Errorf("new shipment id: %w", err)
	}
	sh, ok, err := s.store.create(ctx, tx, Shipment{
		ID: id, InvoiceID: ev.InvoiceID, InvoiceNumber: ev.InvoiceNumber, CustomerID: ev.CustomerID,
		State: d.to, Version: 1, LastEventSeq: ev.Sequence,
	})
	if err != nil || !ok {
		return "", false, err
	}
	err = s.store.addChange(ctx, tx, sh.ID, Change{
		To: sh.State, Version: sh.Version, Cause: string(ev.Type), IdempotencyKey: ev.IdempotencyKey,
	})
	if err != nil {
		return "", false, err
	}
	return d.result, true, nil
}

func (s *Service) applyTo(ctx context.Context, tx bun.IDB, cur Shipment, ev Event) (Result, error) {
	d, err := decide(&cur, ev)
	if err != nil || d.result == ResultStale {
		return d.result, err
	}
	next := cur
	next.LastEventSeq = ev.Sequence
	if d.result == ResultApplied {
		next.State, next.Version = d.to, cur.Version+1
	}
	if _, err := s.store.update(ctx, tx, next); err != nil {
		return "", err
	}
	if d.result != ResultApplied {
		return d.result, nil
	}
	err = s.store.addChange(ctx, tx, cur.ID, Change{
		From: cur.State, To: next.State, Version: next.Version,
		Cause: string(ev.Type), IdempotencyKey: ev.IdempotencyKey,
	})
	return d.result, err
}

// Move is the warehouse moving a shipment to state to, having seen it at version.
// It returns ErrNotFound, a *VersionError when version is not the current one, or a
// *TransitionError when the state machine forbids the move; nothing changes then.
func (s *Service) Move(ctx context.Context, id uuid.UUID, to State, version int64) (Detail, error) {
	var out Detail
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		cur, err := s.store.lockByID(ctx, tx, id)
		if err != nil {
			return err
		}
		if cur.Version != version {
			return &VersionError{Given: version, Current: cur.Version}
		}
		if !CanMove(cur.State, to) {
			return &TransitionError{From: cur.State, To: to}
		}
		next := cur
		next.State, next.Version = to, cur.Version+1
		if out.Shipment, err = s.store.update(ctx, tx, next); err != nil {
			return err
		}
		err = s.store.addChange(ctx, tx, id, Change{From: cur.State, To: to, Version: next.Version, Cause: CauseWarehouse})
		if err != nil {
			return err
		}
		out.History, err = s.store.history(ctx, tx, id)
		return err
	})
	if err != nil {
		return Detail{}, fmt.Errorf("move shipment: %w", err)
	}
	return out, nil
}

// Get returns the shipment with its history, or ErrNotFound.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (Detail, error) {
	var out Detail
	err := s.db.RunInTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if out.Shipment, err = s.store.get(ctx, tx, id); err != nil {
			return err
		}
		out.History, err = s.store.history(ctx, tx, id)
		return err
	})
	if err != nil {
		return Detail{}, fmt.Errorf("get shipment: %w", err)
	}
	return out, nil
}

// Filter selects shipments for List; zero fields select everything.
type Filter struct {
	State     State
	InvoiceID uuid.UUID
	// After is the Seq of the last shipment of the previous page.
	After int64
}

// Page is one page of List.
type Page struct {
	Items []Shipment
	// More is true when shipments follow the last item; the next page starts after
	// its Seq.
	More bool
}

// List returns up to limit shipments matching f in creation order.
func (s *Service) List(ctx context.Context, f Filter, limit int) (Page, error) {
	items, err := s.store.list(ctx, s.db, f, limit+1)
	if err != nil {
		return Page{}, err
	}
	if len(items) > limit {
		return Page{Items: items[:limit], More: true}, nil
	}
	return Page{Items: items}, nil
}
