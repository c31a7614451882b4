package pgdb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

// pipeDB is a database with the notes table whose pool holds one connection, so that
// every pipe and check of a test runs on the same one unless it was dropped. At the
// end of the test it must still be the same: database/sql drops a connection a pipe
// left inside a transaction, and a pipe must leave none there, failed or not.
func pipeDB(t *testing.T) *bun.DB {
	t.Helper()
	db, _ := pgtest.NewDB(t, "kitpipe", notesSchema)
	db.SetMaxOpenConns(1)
	pid := backendPID(t, db)
	t.Cleanup(func() { require.Equal(t, pid, backendPID(t, db), "the connection was dropped") })
	return db
}

func countNotes(t *testing.T, db *bun.DB) int {
	t.Helper()
	var n int
	require.NoError(t, pgdb.Prepared(db).QueryRow(context.Background(), `SELECT count(*) FROM notes`, nil, &n))
	return n
}

const insertNote = `INSERT INTO notes (id, body) VALUES ($1, $2)`

// A queued statement runs with the next one read, in order and in the transaction:
// the read sees it, and the queued write after the read commits with the COMMIT.
func TestPipeRunsQueuedStatementsWithTheNextRead(t *testing.T) {
	t.Parallel()
	exercisePipe(t, pipeDB(t))
}

// exercisePipe runs an Exec, a queued write, a read and a write queued for the COMMIT
// through a pipe on db, whose notes table is empty, and checks what each saw.
func exercisePipe(t *testing.T, db *bun.DB) {
	t.Helper()
	ctx := context.Background()
	err := pgdb.RunInPipe(ctx, db, func(ctx context.Context, p *pgdb.Pipe) error {
		res, err := p.Exec(ctx, insertNote, 1, "exec")
		require.NoError(t, err)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		require.NoError(t, p.Queue(ctx, "second note", insertNote, 2, "queued"))
		var bodies []string
		require.NoError(t, p.Each(ctx, `SELECT body FROM notes WHERE id >= $1 ORDER BY id`, []any{0},
			func(scan func(...any) error) error {
				var b string
				if err := scan(&b); err != nil {
					return err
				}
				bodies = append(bodies, b)
				return nil
			}))
		require.Equal(t, []string{"exec", "queued"}, bodies, "the read ran after the queued insert, in its transaction")
		return p.Queue(ctx, "third note", insertNote, 3, "with the commit")
	})
	require.NoError(t, err)
	require.Equal(t, 3, countNotes(t, db))
}

// A queued statement's error is returned by the call that sends it, named by what;
// nothing of the transaction stays, and the connection goes back to the pool out of
// any transaction.
func TestPipeReturnsAQueuedStatementsErrorWhenItIsSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pipeDB(t)
	for name, send := range map[string]func(ctx context.Context, p *pgdb.Pipe) error{
		"by a read": func(ctx context.Context, p *pgdb.Pipe) error {
			return p.Each(ctx, `SELECT 1`, nil, func(func(...any) error) error { return nil })
		},
		"by an exec": func(ctx context.Context, p *pgdb.Pipe) error {
			_, err := p.Exec(ctx, insertNote, 3, "after")
			return err
		},
		"by the commit": func(context.Context, *pgdb.Pipe) error { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			err := pgdb.RunInPipe(ctx, db, func(ctx context.Context, p *pgdb.Pipe) error {
				_, err := p.Exec(ctx, insertNote, 1, "first")
				require.NoError(t, err)
				require.NoError(t, p.Queue(ctx, "duplicate note", insertNote, 1, "again"),
					"a queued statement is not sent yet")
				return send(ctx, p)
			})
			require.ErrorContains(t, err, "duplicate note: ")
			require.Equal(t, pgdb.CodeUniqueViolation, pgdb.Code(err))
			require.Zero(t, countNotes(t, db), "the whole transaction rolled back")
		})
	}
}

// backendPID is the server process of db's one connection.
func backendPID(t *testing.T, db *bun.DB) int {
	t.Helper()
	var pid int
	require.NoError(t, pgdb.Prepared(db).QueryRow(context.Background(), `SELECT pg_backend_pid()`, nil, &pid))
	return pid
}

// An error of the caller's function rolls back what was sent; one returned before
// anything was sent sends nothing.
func TestPipeRollsBackOnTheCallersError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pipeDB(t)
	mine := errors.New("caller refuses")
	err := pgdb.RunInPipe(ctx, db, func(ctx context.Context, p *pgdb.Pipe) error {
		_, err := p.Exec(ctx, insertNote, 1, "sent")
		require.NoError(t, err)
		require.NoError(t, p.Queue(ctx, "queued note", insertNote, 2, "never sent"))
		return mine
	})
	require.ErrorIs(t, err, mine)
	require.Zero(t, countNotes(t, db))

	err = pgdb.RunInPipe(ctx, db, func(ctx context.Context, p *pgdb.Pipe) error {
		require.NoError(t, p.Queue(ctx, "queued note", insertNote, 1, "never sent"))
		return mine
	})
	require.ErrorIs(t, err, mine)
	require.Zero(t, countNotes(t, db))

	err = pgdb.RunInPipe(ctx, db, func(ctx context.Context, p *pgdb.Pipe) error {
		require.NoError(t, p.Queue(ctx, "queued note", insertNote, 1, "sent with the read"))
		return p.Each(ctx, `SELECT id, body FROM notes`, nil, func(scan func(...any) error) error {
			var id int
			return scan(&id) // one destination for two columns
		})
	})
	require.Error(t, err, "a scan error is the read's error")
	require.Zero(t, countNotes(t, db), "and it rolls back what the read sent")
}

// Statements sent in one round trip each take their own snapshot when they start, as
// they would alone: a read queued behind a lock sees what the lock's holder committed
// before it let go. Event application relies on this (lock the invoice, then read its
// shipment).
func TestPipeReadAfterALockSeesWhatTheHolderCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := pgtest.NewDB(t, "kitpipe", notesSchema)
	holder, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = holder.ExecContext(ctx, `SELECT pg_advisory_xact_lock(42)`)
	require.NoError(t, err)

	seen := make(chan int, 1)
	go func() {
		n := -1
		err := pgdb.RunInPipe(ctx, db, func(ctx context.Context, p *pgdb.Pipe) error {
			if err := p.Queue(ctx, "lock", `SELECT pg_advisory_xact_lock($1)`, 42); err != nil {
				return err
			}
			return p.Each(ctx, `SELECT count(*) FROM notes`, nil, func(scan func(...any) error) error {
				return scan(&n)
			})
		})
		if err != nil {
			n = -2
		}
		seen <- n
	}()
	require.Eventually(t, func() bool {
		var waiting int
		err := pgdb.Prepared(db).QueryRow(ctx, `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database
			WHERE datname = current_database())`, nil, &waiting)
		return err == nil && waiting == 1
	}, 10*time.Second, 5*time.Millisecond, "the pipe never waited for the lock")
	_, err = pgdb.Prepared(holder).Exec(ctx, insertNote, 1, "committed while the pipe waited")
	require.NoError(t, err)
	require.NoError(t, holder.Commit())
	require.Equal(t, 1, <-seen)
}

// A round trip that failed ends the pipe: nothing more is sent, and the transaction
// rolls back even when the caller's function hides the error and returns nil. That
// holds for a statement PostgreSQL refused to run and for one it refused to prepare,
// before the BEGIN was sent.
func TestPipeRollsBackWhenTheCallerHidesAFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pipeDB(t)
	err := pgdb.RunInPipe(ctx, db, func(ctx context.Context, p *pgdb.Pipe) error {
		_, err := p.Exec(ctx, insertNote, 1, "first")
		require.NoError(t, err)
		_, err = p.Exec(ctx, insertNote, 1, "again")
		require.Equal(t, pgdb.CodeUniqueViolation, pgdb.Code(err))
		return nil // the caller hides the error
	})
	require.ErrorIs(t, err, pgdb.ErrPipeFailed)
	require.Equal(t, pgdb.CodeUniqueViolation, pgdb.Code(err), "the failure is wrapped")
	require.Zero(t, countNotes(t, db))

	err = pgdb.RunInPipe(ctx, db, func(ctx context.Context, p *pgdb.Pipe) error {
		require.NoError(t, p.Queue(ctx, "queued note", insertNote, 1, "queued"))
		_, err := p.Exec(ctx, `SELECT no_such_column FROM notes`)
		require.Error(t, err, "the statement cannot be prepared")
		_, err = p.Exec(ctx, insertNote, 2, "after the failure")
		require.ErrorIs(t, err, pgdb.ErrPipeFailed, "a failed pipe sends nothing more")
		return nil
	})
	require.ErrorIs(t, err, pgdb.ErrPipeFailed)
	require.Zero(t, countNotes(t, db), "neither the queued note nor the later one was written")
}

// A pipe kept past the function it was given to refuses every statement: its
// connection is back in the pool.
func TestPipeRefusesStatementsAfterItsTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pipeDB(t)
	var kept *pgdb.Pipe
	require.NoError(t, pgdb.RunInPipe(ctx, db, func(_ context.Context, p *pgdb.Pipe) error {
		kept = p
		return nil
	}))
	require.ErrorContains(t, kept.Queue(ctx, "late note", insertNote, 1, "late"), "has ended")
	_, err := kept.Exec(ctx, insertNote, 1, "late")
	require.ErrorContains(t, err, "has ended")
	require.Zero(t, countNotes(t, db))
}

// Under default_query_exec_mode=simple_protocol, for a pooler that keeps no prepared
// statements, a pipe sends its statements' text with their values written in, and
// does all it does over the extended protocol.
func TestPipeWorksOverTheSimpleProtocol(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, raw := pgtest.NewDB(t, "kitpipe", notesSchema)
	db, err := pgdb.Open(ctx, withSetting(t, raw, "default_query_exec_mode", "simple_protocol"), 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	exercisePipe(t, db)
}

// A change of a table that makes a prepared statement's plan stale fails the pipe
// that next runs it, once: the statement is prepared anew by the pipe after it. The
// statement the connection's Stmts cached for the same text is its own, which pgx's
// cache prepares anew after one failure, with no pipe in between.
func TestPipeStatementsRecoverFromAChangeOfTheirTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pipeDB(t)
	const read = `SELECT body FROM notes WHERE id = $1`
	viaPipe := func() error {
		return pgdb.RunInPipe(ctx, db, func(ctx context.Context, p *pgdb.Pipe) error {
			return p.Each(ctx, read, []any{1}, func(func(...any) error) error { return nil })
		})
	}
	viaStmts := func() error {
		rows, err := pgdb.Prepared(db).Query(ctx, read, 1)
		if err != nil {
			return err
		}
		return rows.Close()
	}
	require.NoError(t, viaPipe())
	require.NoError(t, viaStmts())
	_, err := db.ExecContext(ctx, `ALTER TABLE notes ALTER COLUMN body TYPE varchar(200)`)
	require.NoError(t, err)

	_ = viaStmts() // pgx's cache drops its statement when the server refuses it
	require.NoError(t, viaStmts(), "Stmts prepared its own statement anew")
	err = viaPipe()
	require.Equal(t, "0A000", pgdb.Code(err), "the pipe's plan went stale: %v", err)
	require.NoError(t, viaPipe(), "the pipe prepared its statement anew")
}
