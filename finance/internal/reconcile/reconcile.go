package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/pager"
	"handoff/pkg/integrationkit/pgdb"
)

// ClockSkew widens the window asked of logistics on both sides: its receipt times come
// from another database's clock.
const ClockSkew = time.Minute

// Logistics lists the keys logistics processed in a window; *Client implements it.
type Logistics interface {
	Processed(ctx context.Context, from, to time.Time) (map[string]time.Time, error)
}

// Notifier pages on-call; *pager.Pager implements it.
type Notifier interface {
	Notify(a pager.Alert)
}

// Config tunes a Reconciler.
type Config struct {
	// Overdue is how late past its next attempt a pending event is reported (default 15 min).
	Overdue time.Duration
	// Window is the trailing window of scheduled runs (default 1 h).
	Window time.Duration
}

// Reconciler compares finance's deliveries with logistics' record.
type Reconciler struct {
	db        *bun.DB
	logistics Logistics
	notifier  Notifier
	cfg       Config
	log       *slog.Logger
}

// New returns a reconciler of db against logistics; notifier, when not nil, is paged
// about discrepancies and failed runs.
func New(db *bun.DB, logistics Logistics, notifier Notifier, cfg Config, log *slog.Logger) *Reconciler {
	cfg.Overdue = cmp.Or(cfg.Overdue, 15*time.Minute)
	cfg.Window = cmp.Or(cfg.Window, time.Hour)
	return &Reconciler{db: db, logistics: logistics, notifier: notifier, cfg: cfg,
		log: logging.OrDiscard(log).With("component", "reconcile")}
}

// Reconcile compares the window [from, to), stores the report (also a failed one)
// and pages about what it found. The error is that of the run or of storing it.
func (r *Reconciler) Reconcile(ctx context.Context, from, to time.Time) (Report, error) {
	return r.reconcile(ctx, store{db: r.db}, from, to)
}

// reconcile is Reconcile with every statement run through s. A report that cannot be
// stored is not paged.
func (r *Reconciler) reconcile(ctx context.Context, s store, from, to time.Time) (Report, error) {
	rep := Report{StartedAt: time.Now(), From: from, To: to}
	runErr := r.compare(ctx, s, &rep)
	if runErr != nil {
		rep.Error = runErr.Error()
	}
	id, finished, err := s.save(ctx, rep)
	if err != nil {
		return rep, cmp.Or(runErr, err)
	}
	rep.ID, rep.FinishedAt = id, finished
	r.page(rep)
	return rep, runErr
}

// Scheduled reconciles the trailing Window on one replica at a time (the others skip).
// Every statement of the run goes through the connection that holds the advisory
// lock, outside any transaction, so the lock is never held in a transaction across
// the call to logistics; if that connection is lost, the run's next statement fails
// and it stores and pages nothing, leaving the window to the replica that takes the
// lock next.
func (r *Reconciler) Scheduled(ctx context.Context) {
	ran, err := pgdb.WithTryAdvisoryLock(ctx, r.db, "reconcile", func(ctx context.Context, conn bun.IDB) error {
		now := time.Now()
		rep, err := r.reconcile(ctx, store{db: conn}, now.Add(-r.cfg.Window), now)
		r.log.InfoContext(ctx, "reconciliation", "delivered", rep.Delivered, "processed", rep.Processed,
			"missing", rep.MissingCount, "unknown", rep.UnknownCount, "overdue", rep.OverdueCount)
		return err
	})
	if err != nil {
		r.log.ErrorContext(ctx, "reconciliation failed", "err", err)
	} else if !ran {
		r.log.DebugContext(ctx, "reconciliation skipped: another replica runs it")
	}
}

// compare fills rep. Logistics receives an event after finance wrote it and before
// finance marks it delivered, so its side is read from the earliest creation time of
// the window's deliveries (widened by ClockSkew) to catch every receipt of them.
func (r *Reconciler) compare(ctx context.Context, s store, rep *Report) error {
	fin, err := s.delivered(ctx, rep.From, rep.To)
	if err != nil {
		return err
	}
	fetchFrom := rep.From
	for _, d := range fin {
		fetchFrom = minTime(fetchFrom, d.CreatedAt)
	}
	got, err := r.logistics.Processed(ctx, fetchFrom.Add(-ClockSkew), rep.To.Add(ClockSkew))
	if err != nil {
		return err
	}
	rep.Delivered = len(fin)
	deliveredKeys := make(map[string]bool, len(fin))
	for _, d := range fin {
		deliveredKeys[d.Key] = true
		if _, ok := got[d.Key]; !ok {
			rep.Missing = append(rep.Missing, Discrepancy{IdempotencyKey: d.Key, EventID: d.EventID,
				InvoiceID: d.Aggregate, At: d.DeliveredAt, Detail: "delivered, no processed event in logistics"})
		}
	}
	if err := findUnknown(ctx, s, rep, got, deliveredKeys); err != nil {
		return err
	}
	rep.MissingCount = len(rep.Missing)
	rep.Missing = listed(byTime(rep.Missing))
	if rep.Skipped, err = s.skipped(ctx, rep.From, rep.To); err != nil {
		return err
	}
	rep.Overdue, rep.OverdueCount, err = s.overdue(ctx, r.cfg.Overdue)
	return err
}

// findUnknown fills rep.Unknown with the keys logistics processed in the window that
// finance has no event for (an event delivered just outside the window, or whose
// delivery finance has not recorded yet, is known and not reported).
func findUnknown(ctx context.Context, s store, rep *Report, got map[string]time.Time, delivered map[string]bool) error {
	var candidates []string
	for key, at := range got {
		if at.Before(rep.From) || !at.Before(rep.To) {
			continue
		}
		rep.Processed++
		if !delivered[key] {
			candidates = append(candidates, key)
		}
	}
	slices.Sort(candidates)
	for chunk := range slices.Chunk(candidates, 1000) {
		known, err := s.known(ctx, chunk)
		if err != nil {
			return err
		}
		for _, key := range chunk {
			if !known[key] {
				rep.Unknown = append(rep.Unknown, Discrepancy{IdempotencyKey: key, At: got[key],
					Detail: "processed by logistics, no such event in finance"})
			}
		}
	}
	rep.UnknownCount = len(rep.Unknown)
	rep.Unknown = listed(byTime(rep.Unknown))
	return nil
}

// page tells on-call about each kind of discrepancy, and about a failed run.
func (r *Reconciler) page(rep Report) {
	if r.notifier == nil {
		return
	}
	window := fmt.Sprintf("window %s – %s", rep.From.UTC().Format(time.RFC3339), rep.To.UTC().Format(time.RFC3339))
	if rep.Error != "" {
		r.notifier.Notify(pager.Alert{Key: "reconcile_failed", Kind: "reconcile_failed",
			Title: "reconciliation with logistics failed", Error: rep.Error, Detail: window})
	}
	for _, k := range []struct {
		kind, title string
		count       int
		list        []Discrepancy
	}{
		{"reconcile_missing", "events delivered but never applied by logistics", rep.MissingCount, rep.Missing},
		{"reconcile_unknown", "events applied by logistics but unknown to finance", rep.UnknownCount, rep.Unknown},
		{"reconcile_overdue", "events pending far past their schedule", rep.OverdueCount, rep.Overdue},
	} {
		if k.count == 0 {
			continue
		}
		eg := k.list[0]
		r.notifier.Notify(pager.Alert{Key: k.kind, Kind: k.kind, Title: k.title, EventID: eg.EventID,
			Aggregate: eg.InvoiceID, Error: eg.Detail,
			Detail: fmt.Sprintf("%d found by reconciliation (%s), e.g. key %s", k.count, window, eg.IdempotencyKey)})
	}
}

// byTime sorts ds oldest first, so a listed report shows the earliest ones.
func byTime(ds []Discrepancy) []Discrepancy {
	slices.SortFunc(ds, func(a, b Discrepancy) int { return a.At.Compare(b.At) })
	return ds
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
