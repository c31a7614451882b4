package command

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/cli"
	"handoff/pkg/integrationkit/retention"
)

// Retention is a binary's `retention run`: its jobs, run once now.
type Retention[C any] struct {
	// Summary and Help say what the binary's jobs do, in its help.
	Summary, Help string
	// New returns the binary's retention runner over db, as configured in cfg.
	New func(db *bun.DB, cfg C) (*retention.Runner, error)
}

// retentionCommand is `retention run`: every job now, what each does and its
// progress on Stderr, one line per table on Stdout.
func (b Binary[C]) retentionCommand() cli.Command {
	return cli.Command{Name: "retention run", Summary: b.Retention.Summary, Help: b.Retention.Help,
		Run: b.configured("retention", func(ctx context.Context, cfg C) error {
			return WithDB(ctx, b.DatabaseURL(cfg), func(db *bun.DB) error {
				r, err := b.Retention.New(db, cfg)
				if err != nil {
					return err
				}
				return runRetention(retention.WithProgress(ctx, progress(b.Stderr)), r, b.Stdout)
			})
		})}
}

// progress tells w what each task of a run does before it starts, and its rows so far
// after each batch.
func progress(w io.Writer) retention.Progress {
	return retention.Progress{
		Start: func(t retention.Task) {
			about := t.About
			if about == "" {
				about = "started"
			}
			fmt.Fprintf(w, "retention: %s: %s\n", t.Name, about)
		},
		Batch: func(task string, rows int64) { fmt.Fprintf(w, "retention: %s: %d rows so far\n", task, rows) },
	}
}

// runRetention runs r once and prints on stdout the rows each task handled, one line
// per task, or that another process holds the run's lock. A failing task does not
// hide the others' counts.
func runRetention(ctx context.Context, r *retention.Runner, stdout io.Writer) error {
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
