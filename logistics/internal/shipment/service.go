package shipment

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
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

// ApplyEvent applies ev to its invoice's shipment inside r's transaction, creating
// the shipment when ev is the first event seen. It returns ErrNotYetApplicable,
// changing nothing, when ev needs a shipment that does not exist yet.
func (s *Service) ApplyEvent(ctx context.Context, r pgdb.Runner, ev Event) (Result, error) {
	outs, err := s.ApplyEvents(ctx, r, []Event{ev})
	if err != nil {
		return "", err
	}
	return outs[0].Result, outs[0].Err
}

// ApplyEvents applies evs inside r's transaction with a fixed number of statements
// and returns one outcome per event, in order. Each event gets the outcome it would
// get alone: events of one invoice apply in sequence order, each against the state
// the previous ones left, and an event that cannot apply yet (Outcome.Err) changes
// nothing. The locks and writes are queued (pgdb.Runner.Queue): through a pgdb.Pipe
// the locks travel with the read, and the writes with the COMMIT.
//
// Locking, and why it cannot deadlock: the invoices' advisory locks are taken first,
// in lock-key order, then their shipment rows. Every event application, single or
// batch, does this after claiming its idempotency keys (a batch claims them in key
// order) and afterwards touches only rows it inserted itself; a warehouse move takes
// one shipment row and waits for nothing else. So locks are acquired keys first, then
// invoices, each class in one global order, and no wait can close a cycle. Two event
// applications never contend for a shipment row: its invoice lock already orders them.
func (s *Service) ApplyEvents(ctx context.Context, r pgdb.Runner, evs []Event) ([]Outcome, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	invoices := invoiceIDs(evs)
	if err := s.store.lockInvoices(ctx, r, invoices); err != nil {
		return nil, err
	}
	current, err := s.store.lockByInvoices(ctx, r, invoices)
	if err != nil {
		return nil, err
	}
	p, err := planEvents(current, evs)
	if err != nil {
		return nil, err
	}
	if err := s.store.insertShipments(ctx, r, p.created); err != nil {
		return nil, err
	}
	if err := s.store.updateStates(ctx, r, p.updated); err != nil {
		return nil, err
	}
	if err := s.store.addChanges(ctx, r, p.history); err != nil {
		return nil, err
	}
	return p.outcomes, nil
}

// Move is the warehouse moving a shipment to state to, having seen it at version.
// It returns ErrNotFound, a *VersionError when version is not the current one, or a
// *TransitionError when the state machine forbids the move; nothing changes then.
func (s *Service) Move(ctx context.Context, id uuid.UUID, to State, version int64) (Detail, error) {
	return s.detail(ctx, nil, "move shipment", func(ctx context.Context, tx bun.Tx) (Shipment, error) {
		cur, err := s.store.lockByID(ctx, tx, id)
		if err != nil {
			return Shipment{}, err
		}
		if cur.Version != version {
			return Shipment{}, &VersionError{Given: version, Current: cur.Version}
		}
		if !CanMove(cur.State, to) {
			return Shipment{}, &TransitionError{From: cur.State, To: to}
		}
		next := cur
		next.State, next.Version = to, cur.Version+1
		moved, err := s.store.update(ctx, tx, next)
		if err != nil {
			return Shipment{}, err
		}
		err = s.store.addChanges(ctx, pgdb.Prepared(tx), []change{{shipmentID: id, Change: Change{
			From: cur.State, To: to, Version: next.Version, Cause: CauseWarehouse,
		}}})
		return moved, err
	})
}

// Get returns the shipment with its history, or ErrNotFound.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (Detail, error) {
	return s.detail(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}, "get shipment",
		func(ctx context.Context, tx bun.Tx) (Shipment, error) { return s.store.get(ctx, tx, id) })
}

// detail runs shipmentOf in a transaction of opts and returns the shipment it answers
// with its history, read in the same transaction. An error is wrapped
// in what: the operation's name.
func (s *Service) detail(ctx context.Context, opts *sql.TxOptions, what string,
	shipmentOf func(ctx context.Context, tx bun.Tx) (Shipment, error)) (Detail, error) {
	var out Detail
	err := s.db.RunInTx(ctx, opts, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if out.Shipment, err = shipmentOf(ctx, tx); err != nil {
			return err
		}
		out.History, err = s.store.history(ctx, tx, out.Shipment.ID)
		return err
	})
	if err != nil {
		return Detail{}, fmt.Errorf("%s: %w", what, err)
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
