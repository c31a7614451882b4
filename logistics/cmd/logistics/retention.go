package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/uptrace/bun"

	"handoff/logistics/internal/webhookapi"
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/retention"
	"handoff/pkg/integrationkit/schedule"
)

// retentionConfig is logistics' share of the retention windows.
type retentionConfig struct {
	Schedule     string
	ProcessedAge time.Duration
	Batch        int
}

// parseRetention reads the retention variables.
func parseRetention(env *envconf.Env) retentionConfig {
	c := retentionConfig{
		Schedule:     env.String("RETENTION_SCHEDULE", "0 3 * * *"),
		ProcessedAge: env.Duration("RETENTION_PROCESSED_AGE", 90*24*time.Hour),
		Batch:        env.Int("RETENTION_BATCH", 1000),
	}
	if err := schedule.Validate(c.Schedule); err != nil {
		env.Fail("RETENTION_SCHEDULE", "want a cron spec such as \"0 3 * * *\", got %q", c.Schedule)
	}
	return c
}

// newRetention returns logistics' retention job: processed events older than the
// window are deleted. Finance's reconciliation cannot look further back than this.
func newRetention(db *bun.DB, c retentionConfig, log *slog.Logger) (*retention.Runner, error) {
	purge, err := retention.Purge(retention.PurgeSpec{
		Table: webhookapi.ProcessedEventsTable, Key: "idempotency_key", Time: "received_at",
		OlderThan: c.ProcessedAge, Batch: c.Batch})
	if err != nil {
		return nil, err
	}
	return retention.New(db, retention.Config{Schedule: c.Schedule, Lock: "logistics:retention", Log: log,
		Tasks: []retention.Task{purge}})
}

// retentionCommand runs `logistics retention run`: the job now, one line per table.
func retentionCommand(ctx context.Context, cfg Config, stdout io.Writer) (err error) {
	db, err := pgdb.Open(ctx, cfg.DatabaseURL, 4)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	r, err := newRetention(db, cfg.Retention, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
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
