package pgdb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// WithTryAdvisoryLock runs fn while this process holds the session-level advisory lock
// called name, taken with pg_try_advisory_lock on a connection of its own. When another
// session holds the lock, fn is not run and ran is false: a job guarded this way runs
// on one replica at a time and the others skip it rather than queue behind it.
//
// fn receives that connection and must run every statement of the job on it: the
// lock and the work then share one backend, so exclusivity cannot outlive it. If the
// backend ends while fn runs (pg_terminate_backend, a server restart, a broken
// network), the lock is gone, and so is the connection: fn's next statement fails
// instead of running unguarded beside the replica that takes the lock next. A
// statement cut off by the termination is rolled back before the server frees the
// lock. Statements on conn run one at a time; fn may open a transaction on it.
//
// The lock is released when fn returns; if releasing fails, the connection is discarded
// so that the lock dies with its session instead of lingering in the pool.
func WithTryAdvisoryLock(ctx context.Context, db *bun.DB, name string, fn func(ctx context.Context, conn bun.IDB) error) (ran bool, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("advisory lock %s: connection: %w", name, err)
	}
	defer conn.Close()
	var got bool
	if err := conn.NewRaw(`SELECT pg_try_advisory_lock(hashtextextended(?, 0))`, name).Scan(ctx, &got); err != nil {
		return false, fmt.Errorf("advisory lock %s: %w", name, err)
	}
	if !got {
		return false, nil
	}
	defer func() {
		unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, uerr := conn.NewRaw(`SELECT pg_advisory_unlock(hashtextextended(?, 0))`, name).Exec(unlockCtx); uerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			err = errors.Join(err, fmt.Errorf("advisory unlock %s: %w", name, uerr))
		}
	}()
	return true, fn(ctx, conn)
}
