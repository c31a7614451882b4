package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/uptrace/bun"

	"handoff/logistics/internal/webhookapi"
	"handoff/pkg/integrationkit/command"
	"handoff/pkg/integrationkit/envconf"
	"handoff/pkg/integrationkit/retention"
	"handoff/pkg/integrationkit/schedule"
)

// retentionConfig is how long logistics keeps the events it processed.
type retentionConfig struct {
	Schedule     string
	ProcessedAge time.Duration
	Batch        int
}

// settings declares the retention variables, storing into c.
func (c *retentionConfig) settings() []envconf.Setting {
	return []envconf.Setting{
		envconf.String(&c.Schedule, "RETENTION_SCHEDULE", "0 3 * * *", "cron spec of the retention run",
			func(spec string) error {
				if schedule.Validate(spec) != nil {
					return fmt.Errorf("want a cron spec such as \"0 3 * * *\", got %q", spec)
				}
				return nil
			}),
		// The floor outlasts finance's default retry schedule (ceilings summing to
		// under 13 h): a key deleted while finance still retries its event would let
		// the event apply twice.
		envconf.Duration(&c.ProcessedAge, "RETENTION_PROCESSED_AGE", 90*24*time.Hour, 24*time.Hour,
			"processed events are deleted after this age (2160h is 90 days)"),
		envconf.Int(&c.Batch, "RETENTION_BATCH", 1000, 1, 0, "rows per retention statement"),
	}
}

// newRetention returns logistics' retention job: processed events older than the
// window are deleted. Finance's reconciliation cannot look further back than this.
// obs, when not nil, hears every scheduled run.
func newRetention(db *bun.DB, c retentionConfig, obs retention.Observer, log *slog.Logger) (*retention.Runner, error) {
	purge, err := retention.Purge(retention.PurgeSpec{
		Table: webhookapi.ProcessedEventsTable, Key: "idempotency_key", Time: "received_at",
		OlderThan: c.ProcessedAge, Batch: c.Batch})
	if err != nil {
		return nil, err
	}
	return retention.New(db, retention.Config{Schedule: c.Schedule, Lock: "logistics:retention", Log: log,
		Observer: obs, Tasks: []retention.Task{purge}})
}

// retentionRun is `logistics retention run`: the job now, what it does and its rows
// after each batch on stderr, one line per table on stdout.
func retentionRun() command.Retention[Config] {
	return command.Retention[Config]{
		Summary: "delete processed events past RETENTION_PROCESSED_AGE now",
		Help: "Delete the processed events older than RETENTION_PROCESSED_AGE now, as the\n" +
			"RETENTION_SCHEDULE does, in batches of RETENTION_BATCH. Says on stderr what it does\n" +
			"and how many rows so far after each batch; stdout gets one line per table.",
		New: func(db *bun.DB, cfg Config) (*retention.Runner, error) {
			return newRetention(db, cfg.Retention, nil, nil)
		},
	}
}
