package main

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"handoff/finance/internal/invoice"
	"handoff/pkg/integrationkit/command"
	"handoff/pkg/integrationkit/idempotency"
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
	purgeKeys := func(ctx context.Context, conn bun.IDB) (int64, error) {
		idem, err := idempotency.New(conn, idempotency.Config{Logger: log})
		if err != nil {
			return 0, err
		}
		return idem.Purge(ctx, c.IdempotencyAge)
	}
	keys := retention.Task{Name: idempotency.DefaultTable, Run: purgeKeys,
		About: "delete Idempotency-Key records older than " + shortDuration(c.IdempotencyAge)}
	return retention.New(db, retention.Config{
		Schedule: c.Schedule, Lock: "finance:retention", Log: log, Observer: obs,
		Tasks: []retention.Task{archive, purgeArchive, purgeReports, keys},
	})
}

// shortDuration writes d without its zero minutes and seconds: 24h, 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// retentionRun is `finance retention run`: every job now, what each does and its
// progress on stderr, one line per table on stdout.
func retentionRun() command.Retention[config] {
	return command.Retention[config]{
		Summary: "archive and purge past their windows now; print counts",
		Help: "Run every retention job now, as the RETENTION_SCHEDULE does: move delivered events\n" +
			"older than RETENTION_OUTBOX_AGE to the archive, delete archived events older than\n" +
			"RETENTION_ARCHIVE_AGE, old reconciliation reports and Idempotency-Key records past\n" +
			"RETENTION_IDEMPOTENCY_AGE. Each job says on stderr what it does and how many rows\n" +
			"so far after each batch of RETENTION_BATCH; stdout gets one line per table.",
		New: func(db *bun.DB, cfg config) (*retention.Runner, error) {
			return newRetention(db, cfg.Oncall.Retention, nil, nil)
		},
	}
}
