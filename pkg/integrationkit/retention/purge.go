package retention

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// PurgeSpec describes rows to delete once they are older than a window.
type PurgeSpec struct {
	// Table is the table to purge.
	Table string
	// Key is a column that identifies a row (the primary key).
	Key string
	// Time is the timestamptz column that dates a row.
	Time string
	// OlderThan is the window: rows dated before now() - OlderThan are deleted.
	OlderThan time.Duration
	// Batch is how many rows one statement deletes (default DefaultBatch).
	Batch int
}

// Purge returns a task that deletes the rows of spec in batches. Each batch is one
// statement that locks its rows with FOR UPDATE SKIP LOCKED, so a row in use is left
// for the next run. The window is measured with the database's clock.
func Purge(spec PurgeSpec) (Task, error) {
	spec.Batch = cmp.Or(spec.Batch, DefaultBatch)
	if err := checkIdents(spec.Table, spec.Key, spec.Time); err != nil {
		return Task{}, err
	}
	if spec.OlderThan <= 0 || spec.Batch < 1 {
		return Task{}, fmt.Errorf("retention: purge %s needs a positive OlderThan and Batch", spec.Table)
	}
	about := fmt.Sprintf("delete rows of %s whose %s is older than %s", spec.Table, spec.Time, window(spec.OlderThan))
	return Task{Name: spec.Table, About: about, Run: func(ctx context.Context, db bun.IDB) (int64, error) {
		return batches(ctx, spec.Table, spec.Batch, func(ctx context.Context) (int64, error) {
			res, err := db.NewRaw(`DELETE FROM ? WHERE ? IN (
					SELECT ? FROM ? WHERE ? < now() - make_interval(secs => ?)
					LIMIT ? FOR UPDATE SKIP LOCKED)`,
				bun.Ident(spec.Table), bun.Ident(spec.Key), bun.Ident(spec.Key), bun.Ident(spec.Table),
				bun.Ident(spec.Time), spec.OlderThan.Seconds(), spec.Batch).Exec(ctx)
			if err != nil {
				return 0, fmt.Errorf("purge %s: %w", spec.Table, err)
			}
			return res.RowsAffected()
		})
	}}, nil
}
