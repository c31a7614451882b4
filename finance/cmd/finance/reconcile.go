package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/uptrace/bun"

	"handoff/finance/internal/reconcile"
	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/command"
)

// errDiscrepancies makes `finance reconcile` exit 1 when it found any.
var errDiscrepancies = errors.New("reconciliation found discrepancies")

// reconcileCommand is `finance reconcile [--since=<duration|RFC 3339 time>] [--json]`:
// it compares [since, now) with logistics, stores the report like the scheduled job
// and prints it. It exits 0 when the window is clean, 1 when it found discrepancies,
// and 2 when it could not reconcile (a mistake on the command line, an invalid
// configuration, a database or a logistics that does not answer).
func (e env) reconcileCommand() cli.Command {
	return cli.Command{
		Name: "reconcile", Summary: "compare deliveries with logistics' processed events",
		Help: "Compare the events finance marked delivered in [--since, now) with the ones logistics\n" +
			"processed (read from LOGISTICS_API_URL with LOGISTICS_OPS_TOKEN), store the report like\n" +
			"the scheduled job and print it. Progress goes to stderr.\n\n" +
			"Exit status: 0 clean, 1 discrepancies found, 2 could not reconcile (a mistake on\n" +
			"the command line, an invalid configuration, the database or logistics unreachable).",
		Setup: func(fs *flag.FlagSet) cli.Runner {
			var since sinceFlag
			fs.Var(&since, "since", "a `duration` ago (1h) or an RFC 3339 time: where the window starts "+
				"(default RECONCILE_WINDOW ago)")
			asJSON := jsonFlag(fs)
			return func(ctx context.Context, _ []string) error {
				err := e.reconcile(ctx, since, *asJSON)
				if errors.Is(err, errDiscrepancies) {
					return err
				}
				return cli.Exit(2, err)
			}
		},
	}
}

func (e env) reconcile(ctx context.Context, since sinceFlag, asJSON bool) error {
	cfg, err := e.config("reconcile")
	if err != nil {
		return err
	}
	now := time.Now()
	from, err := since.from(now, cfg.Oncall.Reconcile.Window)
	if err != nil {
		return err
	}
	return command.WithDB(ctx, cfg.DatabaseURL, func(db *bun.DB) error {
		progress := func(read int) {
			fmt.Fprintf(e.stderr, "reconcile: %d processed events read from logistics so far\n", read)
		}
		rec, closeClient, err := newReconciler(db, cfg.Oncall.Reconcile, newGuard(cfg), nil, nil, progress)
		if err != nil {
			return err
		}
		defer closeClient()
		fmt.Fprintf(e.stderr, "reconcile: comparing %s – %s with logistics at %s\n",
			from.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), clean(cfg.Oncall.Reconcile.LogisticsURL, 0))
		rep, err := rec.Reconcile(ctx, from, now)
		if err != nil {
			return fmt.Errorf("could not reconcile: %w", err)
		}
		fmt.Fprintf(e.stderr, "reconcile: stored as report %d\n", rep.ID)
		if asJSON {
			err = writeJSON(e.stdout, newReportDoc(rep))
		} else {
			err = printReport(e.stdout, rep)
		}
		if err != nil {
			return err
		}
		if rep.Discrepancies() > 0 {
			return fmt.Errorf("%w: %d", errDiscrepancies, rep.Discrepancies())
		}
		return nil
	})
}

// sinceFlag is --since: a positive duration before now, or an RFC 3339 time; unset,
// the configured window.
type sinceFlag struct {
	raw string
	ago time.Duration
	at  time.Time
}

func (s *sinceFlag) String() string { return s.raw }

func (s *sinceFlag) Set(v string) error {
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		*s = sinceFlag{raw: v, ago: d}
		return nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		*s = sinceFlag{raw: v, at: t}
		return nil
	}
	return errors.New("want a positive duration (1h) or an RFC 3339 time such as 2030-01-02T03:04:05Z")
}

// from is the start of the window ending at now: window ago when --since was not given.
func (s sinceFlag) from(now time.Time, window time.Duration) (time.Time, error) {
	switch {
	case s.raw == "":
		return now.Add(-window), nil
	case s.ago > 0:
		return now.Add(-s.ago), nil
	case !s.at.Before(now):
		return time.Time{}, cli.Usagef("invalid --since %q: want a past time", s.raw)
	}
	return s.at, nil
}

// printReport writes a report for a person: the counts, each discrepancy listed, and
// the verdict.
func printReport(w io.Writer, r reconcile.Report) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	p("window     %s – %s\n", r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339))
	p("delivered  %d (finance: events marked delivered in the window)\n"+
		"processed  %d (logistics: events it processed in the window)\n"+
		"skipped    %d (by operators: resolved, not discrepancies)\n",
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
			p("  %s  event=%s invoice=%s  %s\n", clean(d.IdempotencyKey, 0), d.EventID, clean(d.InvoiceID, 0), d.Detail)
		}
		if len(k.list) < k.count {
			p("  (the first %d listed)\n", len(k.list))
		}
	}
	if n := r.Discrepancies(); n > 0 {
		p("\n%d discrepancies: see docs/operations.md § Reconciliation discrepancy\n", n)
	} else {
		p("\nclean: nothing to look at\n")
	}
	return err
}
