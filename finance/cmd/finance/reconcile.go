package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"handoff/finance/internal/reconcile"
	"handoff/pkg/integrationkit/pgdb"
)

// errDiscrepancies makes `finance reconcile` exit non-zero when it found any.
var errDiscrepancies = errors.New("reconciliation found discrepancies")

// reconcileCommand runs `finance reconcile --since=<duration|RFC 3339 time>`: it
// compares [since, now) with logistics, stores the report like the scheduled job and
// prints it.
func reconcileCommand(ctx context.Context, cfg config, args []string, stdout io.Writer) (err error) {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	since := fs.String("since", cfg.Oncall.Reconcile.Window.String(), "start of the window: a duration ago (1h) or an RFC 3339 time")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		return fmt.Errorf("want reconcile [--since=1h|2030-01-02T03:04:05Z]: %w", errUsage)
	}
	now := time.Now()
	from, err := parseSince(*since, now)
	if err != nil {
		return err
	}
	db, err := pgdb.Open(ctx, cfg.DatabaseURL, 4)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	rec, closeClient, err := newReconciler(db, cfg.Oncall.Reconcile, newGuard(cfg), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer closeClient()
	rep, err := rec.Reconcile(ctx, from, now)
	if err != nil {
		return err
	}
	if err := printReport(stdout, rep); err != nil {
		return err
	}
	if rep.Discrepancies() > 0 {
		return fmt.Errorf("%w: %d", errDiscrepancies, rep.Discrepancies())
	}
	return nil
}

// parseSince reads a duration before now or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil && t.Before(now) {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("invalid --since %q: want a positive duration (1h) or a past RFC 3339 time", s)
}

// printReport writes a report for a person: the counts, then each discrepancy listed.
func printReport(w io.Writer, r reconcile.Report) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	p("window     %s – %s\n", r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339))
	p("delivered  %d (finance)\nprocessed  %d (logistics)\nskipped    %d (by operators: resolved, not discrepancies)\n",
		r.Delivered, r.Processed, r.Skipped)
	for _, k := range []struct {
		name  string
		count int
		list  []reconcile.Discrepancy
	}{{"delivered but never applied", r.MissingCount, r.Missing},
		{"applied but unknown to finance", r.UnknownCount, r.Unknown},
		{"pending far past schedule", r.OverdueCount, r.Overdue}} {
		p("%-31s %d\n", k.name, k.count)
		for _, d := range k.list {
			p("  %s  event=%s invoice=%s  %s\n", d.IdempotencyKey, d.EventID, d.InvoiceID, d.Detail)
		}
	}
	return err
}
