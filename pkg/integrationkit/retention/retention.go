// Package retention keeps tables from growing without bound: scheduled, batched,
// idempotent jobs that delete or archive rows past their window, run by one replica
// at a time.
//
// A Runner holds Tasks. RunOnce takes a PostgreSQL advisory lock (pg_try_advisory_lock)
// and runs every task on the connection that holds it; a replica that finds the lock
// taken skips the run. Because the lock and the work share one backend, a run cannot
// outlive its lock: when that backend is terminated, the task's next statement fails
// and the run ends with an error instead of working beside the replica that takes the
// lock next. Each task works in batches, one short statement per batch that locks its
// rows with FOR UPDATE SKIP LOCKED, so no long transaction holds locks and live
// traffic is never blocked. Running a task again changes nothing that the first run did not leave to do.
//
//	purge, _ := retention.Purge(retention.PurgeSpec{
//		Table: "processed_events", Key: "idempotency_key", Time: "received_at",
//		OlderThan: 90 * 24 * time.Hour,
//	})
//	r, _ := retention.New(db, retention.Config{Schedule: "0 3 * * *", Tasks: []retention.Task{purge}})
//	g.Go(func() error { return r.Run(ctx) })
package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/logging"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/schedule"
)

// DefaultBatch is how many rows one batch touches when a spec leaves Batch zero.
const DefaultBatch = 1000

// Task is one retention job. Run removes or moves every row past its window, in
// batches, and returns how many rows it handled; it must be safe to run again. It
// must run every statement on db, the connection that holds the run's lock, so that
// it stops when the lock is lost.
type Task struct {
	Name string
	// About says what the task does, for a person watching a run ("move delivered
	// events older than 30 days …"); Purge and ArchiveOutbox fill it in.
	About string
	Run   func(ctx context.Context, db bun.IDB) (int64, error)
}

// Progress hears a run as it goes, for a person watching it; either func may be nil.
// Like httptrace.ClientTrace it travels in the context (WithProgress), so a task
// reports without a change to its signature.
type Progress struct {
	// Start is called before each task runs.
	Start func(t Task)
	// Batch is called after each batch of a Purge or ArchiveOutbox task that handled
	// rows, with the rows the task has handled so far.
	Batch func(task string, rows int64)
}

type progressKey struct{}

// WithProgress returns ctx carrying p: RunOnce(ctx) reports to it.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

func progressOf(ctx context.Context) Progress {
	p, _ := ctx.Value(progressKey{}).(Progress)
	return p
}

// Config describes a Runner.
type Config struct {
	// Schedule is a robfig/cron spec (default "0 3 * * *").
	Schedule string
	// Lock names the advisory lock that keeps runs to one replica (default "retention").
	Lock string
	// Tasks run in order on every run.
	Tasks []Task
	// Log receives one line per run; nil discards.
	Log *slog.Logger
	// Observer hears the result of every scheduled run; nil hears nothing.
	Observer Observer
}

// Observer hears what a scheduled run did (metrics.Retention implements it): a
// skipped run, a finished one, or one that failed with err. It must not block.
type Observer interface {
	Ran(ctx context.Context, rep Report, err error)
}

// Runner runs the tasks now (RunOnce) or on the schedule (Run).
type Runner struct {
	db  *bun.DB
	cfg Config
	log *slog.Logger
}

// New returns a runner over db.
func New(db *bun.DB, cfg Config) (*Runner, error) {
	cfg.Schedule = cmp.Or(cfg.Schedule, "0 3 * * *")
	cfg.Lock = cmp.Or(cfg.Lock, "retention")
	if err := schedule.Validate(cfg.Schedule); err != nil {
		return nil, fmt.Errorf("retention: Schedule: %w", err)
	}
	for i, t := range cfg.Tasks {
		if t.Name == "" || t.Run == nil {
			return nil, fmt.Errorf("retention: task %d needs a Name and a Run", i+1)
		}
	}
	return &Runner{db: db, cfg: cfg, log: logging.OrDiscard(cfg.Log).With("component", "retention")}, nil
}

// Count is what one task did in one run.
type Count struct {
	Task string
	Rows int64
}

// Report is the result of one run.
type Report struct {
	// Skipped is true when another replica held the lock: nothing ran.
	Skipped bool
	Counts  []Count
}

// RunOnce runs every task now, on the connection that holds the advisory lock. A
// failing task does not stop the others; their errors are joined. If that connection
// is lost, every statement left fails, so no task works without the lock. A Progress
// in ctx (WithProgress) hears each task start and each batch.
func (r *Runner) RunOnce(ctx context.Context) (Report, error) {
	var rep Report
	progress := progressOf(ctx)
	ran, err := pgdb.WithTryAdvisoryLock(ctx, r.db, r.cfg.Lock, func(ctx context.Context, conn bun.IDB) error {
		var errs []error
		for _, t := range r.cfg.Tasks {
			if progress.Start != nil {
				progress.Start(t)
			}
			n, err := t.Run(ctx, conn)
			rep.Counts = append(rep.Counts, Count{Task: t.Name, Rows: n})
			if err != nil {
				errs = append(errs, fmt.Errorf("retention %s: %w", t.Name, err))
			}
		}
		return errors.Join(errs...)
	})
	rep.Skipped = !ran && err == nil
	return rep, err
}

// Run runs the tasks on the schedule until ctx ends.
func (r *Runner) Run(ctx context.Context) error {
	s, err := schedule.New(r.cfg.Schedule, r.scheduled, r.log)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

func (r *Runner) scheduled(ctx context.Context) {
	start := time.Now()
	rep, err := r.RunOnce(ctx)
	if r.cfg.Observer != nil {
		r.cfg.Observer.Ran(ctx, rep, err)
	}
	attrs := []any{"skipped", rep.Skipped, "duration_ms", time.Since(start).Milliseconds()}
	for _, c := range rep.Counts {
		attrs = append(attrs, c.Task, c.Rows)
	}
	if err != nil {
		r.log.ErrorContext(ctx, "retention run failed", append(attrs, "err", err)...)
		return
	}
	r.log.InfoContext(ctx, "retention run", attrs...)
}

// window says a duration for a person: whole days as days ("30 days"), else as Go
// writes it.
func window(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d%day == 0:
		return fmt.Sprintf("%d days", d/day)
	}
	return d.String()
}

func checkIdents(names ...string) error {
	for _, n := range names {
		if !pgdb.ValidIdentifier(n) {
			return fmt.Errorf("retention: %q is not a plain lowercase identifier", n)
		}
	}
	return nil
}

// batches calls step until it handles fewer than batch rows, and adds up the rows,
// reporting each batch of task to the Progress in ctx.
func batches(ctx context.Context, task string, batch int, step func(ctx context.Context) (int64, error)) (int64, error) {
	var total int64
	progress := progressOf(ctx).Batch
	for {
		n, err := step(ctx)
		total += n
		if err == nil && n > 0 && progress != nil {
			progress(task, total)
		}
		if err != nil || n < int64(batch) {
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
