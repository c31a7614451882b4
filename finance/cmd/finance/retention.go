package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/uptrace/bun"

	"handoff/finance/internal/invoice"
	"handoff/pkg/integrationkit/idempotency"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/retention"
)

// newRetention returns finance's retention jobs: delivered events move
// to the archive with their attempts, archived ones and old reconciliation reports
// are deleted, and so are idempotency keys past their window. obs, when not nil, hears
// every scheduled run.
func newRetention(db *bun.DB, c retentionConfig, obs retention.Observer, log *slog.Logger) (*retention.Runner, error) {
	archive, err := retention.ArchiveOutbox(retention.ArchiveSpec{
		Outbox: invoice.OutboxTable, OlderThan: c.OutboxAge, Batch: c.Batch})
	if err != nil {
		return nil, err
	}
	purgeArchive, err := retention.Purge(retention.PurgeSpec{
		Table: invoice.OutboxTable + "_archive", Key: "id", Time: "delivered_at", OlderThan: c.ArchiveAge, Batch: c.Batch})
	if err != nil {
		return nil, err
	}
	purgeReports, err := retention.Purge(retention.PurgeSpec{
		Table: "finance_reconciliations", Key: "id", Time: "finished_at", OlderThan: c.OutboxAge, Batch: c.Batch})
	if err != nil {
		return nil, err
	}
	// The keys are purged through the run's connection, the one that holds its lock.
	keys := retention.Task{Name: idempotency.DefaultTable, Run: func(ctx context.Context, conn bun.IDB) (int64, error) {
		idem, err := idempotency.New(conn, idempotency.Config{Logger: log})
		if err != nil {
			return 0, err
		}
		return idem.Purge(ctx, c.IdempotencyAge)
	}}
	return retention.New(db, retention.Config{
		Schedule: c.Schedule, Lock: "finance:retention", Log: log, Observer: obs,
		Tasks: []retention.Task{archive, purgeArchive, purgeReports, keys},
	})
}

// retentionCommand runs `finance retention run`: every job now, one line per table.
func retentionCommand(ctx context.Context, cfg config, args []string, stdout io.Writer) (err error) {
	if len(args) != 1 || args[0] != "run" {
		return fmt.Errorf("want retention run: %w", errUsage)
	}
	db, err := pgdb.Open(ctx, cfg.DatabaseURL, 4)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	r, err := newRetention(db, cfg.Oncall.Retention, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	return printRetention(ctx, r, stdout)
}

// printRetention runs r once and prints what each task did.
func printRetention(ctx context.Context, r *retention.Runner, stdout io.Writer) error {
	rep, err := r.RunOnce(ctx)
	if rep.Skipped {
		_, werr := fmt.Fprintln(stdout, "skipped: another process is running retention")
		return errors.Join(err, werr)
	}
	for _, c := range rep.Counts {
		if _, werr := fmt.Fprintf(stdout, "%-28s %d\n", c.Task, c.Rows); werr != nil {
			return errors.Join(err, werr)
		}
	}
	return err
}
