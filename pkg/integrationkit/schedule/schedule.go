// Package schedule runs a job on a robfig/cron schedule under the kit's runner
// contract: Run(ctx) blocks until ctx ends and returns once the job in progress, if
// any, has returned. A run that is still going when the next one is due is skipped,
// so a slow job never piles up behind itself.
package schedule

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/robfig/cron/v3"

	"handoff/pkg/integrationkit/logging"
)

// Validate reports whether spec is a schedule Run accepts: five cron fields
// ("0 3 * * *") or a descriptor ("@hourly", "@every 10m").
func Validate(spec string) error {
	if _, err := cron.ParseStandard(spec); err != nil {
		return fmt.Errorf("schedule %q: %w", spec, err)
	}
	return nil
}

// Job is one scheduled run; its ctx ends when the runner stops.
type Job func(ctx context.Context)

// Runner runs a Job on a schedule.
type Runner struct {
	spec string
	job  Job
	log  *slog.Logger
}

// New returns a runner of job on spec; nil log discards the scheduler's messages.
func New(spec string, job Job, log *slog.Logger) (*Runner, error) {
	if err := Validate(spec); err != nil {
		return nil, err
	}
	if job == nil {
		return nil, fmt.Errorf("schedule %q: job is nil", spec)
	}
	return &Runner{spec: spec, job: job, log: logging.OrDiscard(log)}, nil
}

// Run starts the schedule and blocks until ctx ends; it then waits for a run in
// progress to return and returns nil.
func (r *Runner) Run(ctx context.Context) error {
	c := cron.New(cron.WithChain(cron.SkipIfStillRunning(cronLogger{r.log})))
	if _, err := c.AddFunc(r.spec, func() { r.job(ctx) }); err != nil {
		return fmt.Errorf("schedule %q: %w", r.spec, err)
	}
	c.Start()
	<-ctx.Done()
	<-c.Stop().Done()
	return nil
}

// cronLogger lets cron report through slog; its chatter is debug level.
type cronLogger struct{ log *slog.Logger }

func (l cronLogger) Info(msg string, keysAndValues ...any) {
	l.log.Debug("cron: "+msg, keysAndValues...)
}

func (l cronLogger) Error(err error, msg string, keysAndValues ...any) {
	l.log.Error("cron: "+msg, append(keysAndValues, "err", err)...)
}
