// Package ops is what finance's on-call engineers do without a database console: see
// the outbox (counts, the oldest pending event, circuits), find events, read one with
// every attempt, trace an invoice across both services, and act: replay dead letters
// or give them up (skip), one by one or by filter, send a delivered event again
// (resend), move undelivered events to the current destination (retarget), and pause
// or resume a destination. Every action is recorded in the audit log (package audit)
// in its own transaction. The ops API, the dashboard and the CLI all go through it.
package ops

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"handoff/finance/internal/audit"
	"handoff/finance/internal/invoice"
	"handoff/finance/internal/logisticsclient"
	"handoff/pkg/integrationkit/breaker"
	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/outbox"
)

// Invoices finds the invoice a reference names; *invoice.Service implements it.
type Invoices interface {
	Find(ctx context.Context, ref string) (invoice.Invoice, error)
}

// Circuits lists the delivery circuits and pauses or resumes a destination, each in
// db's transaction; *breaker.Breaker implements it.
type Circuits interface {
	Circuits(ctx context.Context, db bun.IDB) ([]breaker.Circuit, error)
	Pause(ctx context.Context, db bun.IDB, dest string) (bool, error)
	Resume(ctx context.Context, db bun.IDB, dest string) (bool, error)
}

// Logistics reads logistics' record of finance's events; *logisticsclient.Client
// implements it.
type Logistics interface {
	ProcessedEvents(ctx context.Context, q logisticsclient.Query) (logisticsclient.Page, error)
}

// Archive finds an aggregate's events that retention moved out of the outbox, with
// their attempts, in sequence order. The retention job's archive implements it.
type Archive interface {
	AggregateEvents(ctx context.Context, aggregateKey string) ([]outbox.EventDetail, error)
}

// Reconciliations reports the latest reconciliation of finance's deliveries with
// logistics' record; ok is false before the first run. The reconciliation job
// implements it.
type Reconciliations interface {
	Latest(ctx context.Context) (r Reconciliation, ok bool, err error)
}

// Reconciliation is one comparison of a time window's delivered keys (finance) with
// its processed keys (logistics).
type Reconciliation struct {
	FinishedAt time.Time
	From, To   time.Time
	Delivered  int
	Processed  int
	// Skipped were skipped by an operator in the window: resolved, not discrepancies.
	Skipped int
	// Missing were delivered but never applied; Unknown were applied but are unknown to
	// finance; Overdue are pending far past their schedule. The counts are complete;
	// the lists of idempotency keys may be cut short.
	MissingCount, UnknownCount, OverdueCount int
	Missing, Unknown, Overdue                []string
	// Error is why the run could not finish; empty when it did.
	Error string
}

// Clean reports whether the run finished and found nothing wrong.
func (r Reconciliation) Clean() bool {
	return r.Error == "" && r.MissingCount+r.UnknownCount+r.OverdueCount == 0
}

// Config holds the service's collaborators. DB, Outbox, Invoices and Circuits are
// required; Logistics, Archive and Reconciliations are optional and their part of a
// page says so when absent, and without Destination nothing can be retargeted.
type Config struct {
	DB       *bun.DB
	Outbox   *outbox.Store
	Invoices Invoices
	Circuits Circuits
	// Destination is where new events go (LOGISTICS_WEBHOOK_URL): Retarget moves
	// events there.
	Destination     string
	Logistics       Logistics
	Archive         Archive
	Reconciliations Reconciliations
	Log             *slog.Logger
}

// Service answers the operators' questions and carries out their actions.
type Service struct {
	cfg   Config
	log   *slog.Logger
	audit audit.Store
}

// New returns the service of cfg.
func New(cfg Config) (*Service, error) {
	if cfg.DB == nil || cfg.Outbox == nil || cfg.Invoices == nil || cfg.Circuits == nil {
		return nil, errors.New("ops: DB, Outbox, Invoices and Circuits are required")
	}
	return &Service{cfg: cfg, log: logging.OrDiscard(cfg.Log).With("component", "ops")}, nil
}

// Overview is the state of delivery at a glance.
type Overview struct {
	Stats    outbox.Stats
	Circuits []breaker.Circuit
	// Reconciliation is the latest run; nil when none ran or none is configured.
	Reconciliation *Reconciliation
	// ReconciliationNote says why Reconciliation is nil, or why it could not be read.
	ReconciliationNote string
}

// Overview returns the outbox counts, the oldest pending age, every circuit and the
// latest reconciliation.
func (s *Service) Overview(ctx context.Context) (Overview, error) {
	var out Overview
	var err error
	if out.Stats, err = s.cfg.Outbox.Stats(ctx, s.cfg.DB); err != nil {
		return Overview{}, err
	}
	if out.Circuits, err = s.Circuits(ctx); err != nil {
		return Overview{}, err
	}
	out.Reconciliation, out.ReconciliationNote = s.reconciliation(ctx)
	return out, nil
}

func (s *Service) reconciliation(ctx context.Context) (*Reconciliation, string) {
	if s.cfg.Reconciliations == nil {
		return nil, "reconciliation is not configured"
	}
	r, ok, err := s.cfg.Reconciliations.Latest(ctx)
	switch {
	case err != nil:
		s.log.WarnContext(ctx, "read latest reconciliation", "err", err)
		return nil, "the latest reconciliation could not be read"
	case !ok:
		return nil, "no reconciliation has run yet"
	}
	return &r, ""
}

// Circuits returns the circuit of every destination that ever failed or was paused.
func (s *Service) Circuits(ctx context.Context) ([]breaker.Circuit, error) {
	return s.cfg.Circuits.Circuits(ctx, s.cfg.DB)
}

// Events returns a page of events matching f, newest first.
func (s *Service) Events(ctx context.Context, f outbox.Filter) (outbox.EventPage, error) {
	return s.cfg.Outbox.List(ctx, s.cfg.DB, f)
}

// Event returns one event with every attempt, or an error wrapping outbox.ErrNotFound.
func (s *Service) Event(ctx context.Context, id uuid.UUID) (outbox.EventDetail, error) {
	return s.cfg.Outbox.Detail(ctx, s.cfg.DB, id)
}

// AggregateKey returns the outbox aggregate key of the invoice ref names (its id,
// INV-004711 or 4711), for filtering events by invoice: see InvoiceID.
func (s *Service) AggregateKey(ctx context.Context, ref string) (string, error) {
	id, err := s.InvoiceID(ctx, ref)
	if err != nil {
		return "", err
	}
	return id.String(), nil
}

// InvoiceID returns the id of the invoice ref names (its id, INV-004711 or 4711). An
// id is taken as it is, so a filter on an unknown id finds nothing rather than
// failing.
func (s *Service) InvoiceID(ctx context.Context, ref string) (uuid.UUID, error) {
	if id, err := uuid.Parse(ref); err == nil {
		return id, nil
	}
	inv, err := s.cfg.Invoices.Find(ctx, ref)
	if err != nil {
		return uuid.Nil, err
	}
	return inv.ID, nil
}

// Destination is where new events go (LOGISTICS_WEBHOOK_URL): Retarget moves events
// there. "" when none is configured.
func (s *Service) Destination() string { return s.cfg.Destination }
