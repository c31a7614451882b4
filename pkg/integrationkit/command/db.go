package command

import (
	"context"
	"errors"

	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
)

// smallPool is the pool of a command other than serve (`retention run` among them):
// one connection holds a run's advisory lock and runs every statement.
const smallPool = 4

// WithDB runs f on the small pool a command other than serve uses on the database at
// url, and closes the pool after f.
func WithDB(ctx context.Context, url string, f func(db *bun.DB) error) (err error) {
	db, err := pgdb.Open(ctx, url, smallPool)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	return f(db)
}
