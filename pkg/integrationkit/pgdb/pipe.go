package pgdb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
)

// rollbackTimeout bounds the ROLLBACK of a failed pipe; a connection that does not
// answer by then is closed instead.
const rollbackTimeout = 5 * time.Second

// BEGIN and COMMIT go as they are: they have no plan to keep.
const (
	sqlBegin  = "BEGIN"
	sqlCommit = "COMMIT"
)

// Runner runs a transaction's parameterised statements ($1, $2, …), each prepared once
// per connection. Stmts runs every statement at once; a Pipe holds back those whose
// result nobody reads (Queue) and sends them with the next statement that is read.
// Code written against Runner serves both: inbox.Process applies a request through a
// Pipe, inbox.ProcessTx through the Stmts of the caller's transaction.
type Runner interface {
	// Exec runs query and returns what it did (its RowsAffected).
	Exec(ctx context.Context, query string, args ...any) (sql.Result, error)
	// Each runs query and calls row once per result row, with a function that scans
	// the row's columns into dest. In a Pipe an error of row, like any error of a
	// round trip, ends the transaction.
	Each(ctx context.Context, query string, args []any, row func(scan func(dest ...any) error) error) error
	// Queue runs a statement whose result is not read. Stmts runs it at once and
	// returns its error; a Pipe sends it with the next Exec, Each or the COMMIT,
	// whichever comes first, and that call returns its error. An error of the
	// statement itself (PostgreSQL refused to prepare or to run it) is wrapped in
	// what.
	Queue(ctx context.Context, what, query string, args ...any) error
}

// Each runs a statement that returns rows and calls row for each of them.
func (s Stmts) Each(ctx context.Context, query string, args []any, row func(scan func(dest ...any) error) error) error {
	rows, err := s.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Queue runs a statement whose result is not read, at once; what names it in the
// error.
func (s Stmts) Queue(ctx context.Context, what, query string, args ...any) error {
	if _, err := s.Exec(ctx, query, args...); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Pipe is a transaction on one pgx connection that sends its statements in as few
// round trips as their results allow: the BEGIN and every queued statement travel
// with the next statement whose result is read, and the last queued ones with the
// COMMIT. A transaction that claims a key, reads a row and writes two is three round
// trips instead of six: half the waits, system calls and wake-ups on both sides.
// PostgreSQL runs the statements in order, each with its own snapshot as it would
// have alone; after an error it runs none of the rest of that round trip.
//
// Each statement is prepared once per connection, by its text, which must therefore
// be fixed (values are parameters, never formatted in): a pipe keeps every text it
// has prepared for the life of the connection. (Under simple_protocol nothing is
// prepared; see PrepareBatched.) The first use of a text on a connection costs one
// round trip more, to prepare it.
//
// A Pipe is not safe for concurrent use, and is not to be used after the function
// RunInPipe gave it to has returned: it then refuses every statement.
type Pipe struct {
	conn   *pgx.Conn
	simple bool
	// ended is set when RunInPipe is done with the transaction.
	ended  bool
	queued []queued
	// begun is set once the BEGIN has been sent.
	begun bool
	// failed is the first error of a round trip: the pipe sends nothing more, and
	// its transaction rolls back even when fn returns nil.
	failed error
	// stale are the prepared statements PostgreSQL no longer accepts (a change of
	// a table made their plan's result type stale, or the statement is gone): the
	// rollback deallocates them, so the next use prepares them anew.
	stale []string
}

// queued is a statement waiting for the next round trip.
type queued struct {
	what, sql string
	args      []any
}

var _ Runner = (*Pipe)(nil)
var _ Runner = Stmts{}

// ErrPipeFailed wraps the error of a pipe's earlier round trip: once a round trip has
// failed, the pipe sends nothing more, and RunInPipe rolls its transaction back even
// when fn hid the error and returned nil.
var ErrPipeFailed = errors.New("pgdb: a statement of the pipe failed; its transaction rolls back")

// RunInPipe runs fn in a transaction on a connection of db's pool and commits it when
// fn returns nil and every round trip succeeded. Otherwise it rolls the transaction
// back and returns fn's error, or, when fn returned nil, the failed round trip's
// wrapped in ErrPipeFailed, or the error of the COMMIT's own round trip. Statements
// run through p, so fn must not use db meanwhile for work of the same transaction. A
// fn that sends nothing costs no round trip.
func RunInPipe(ctx context.Context, db *bun.DB, fn func(ctx context.Context, p *Pipe) error) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	return WithPgx(c.Conn, func(pc *pgx.Conn) error {
		p := &Pipe{conn: pc, simple: pc.Config().DefaultQueryExecMode == pgx.QueryExecModeSimpleProtocol}
		defer func() { p.ended = true }()
		p.queue("begin", sqlBegin)
		if err := fn(ctx, p); err != nil {
			return p.abort(err)
		}
		if p.failed != nil {
			return p.abort(fmt.Errorf("%w: %w", ErrPipeFailed, p.failed))
		}
		if !p.begun && len(p.queued) == 1 {
			return nil // only the BEGIN: nothing to send
		}
		p.queue("commit", sqlCommit)
		if _, err := p.send(ctx, nil); err != nil {
			return p.abort(err)
		}
		return nil
	})
}

// WithPgx runs fn on the pgx connection beneath conn, a connection of a database on
// pgx's database/sql driver (as Open makes), for what database/sql cannot express:
// batches, LISTEN.
func WithPgx(conn *sql.Conn, fn func(pc *pgx.Conn) error) error {
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("pgdb: the database is not opened with the pgx driver (its connection is a %T)", dc)
		}
		return fn(sc.Conn())
	})
}

// Exec runs query, after every statement queued, and returns its RowsAffected.
func (p *Pipe) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	p.queue("", query, args...)
	tag, err := p.send(ctx, nil)
	if err != nil {
		return nil, err
	}
	return driver.RowsAffected(tag.RowsAffected()), nil
}

// Each runs query, after every statement queued, and calls row for each row.
func (p *Pipe) Each(ctx context.Context, query string, args []any, row func(scan func(dest ...any) error) error) error {
	p.queue("", query, args...)
	_, err := p.send(ctx, func(rows pgx.Rows) error {
		for rows.Next() {
			if err := row(rows.Scan); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	return err
}

// Queue holds query back until the next round trip; it returns nil, or errPipeEnded
// after RunInPipe returned.
func (p *Pipe) Queue(_ context.Context, what, query string, args ...any) error {
	if p.ended {
		return errPipeEnded
	}
	p.queue(what, query, args...)
	return nil
}

// errPipeEnded refuses a statement given to a pipe whose transaction has ended.
var errPipeEnded = errors.New("pgdb: the pipe's transaction has ended")

func (p *Pipe) queue(what, query string, args ...any) {
	p.queued = append(p.queued, queued{what: what, sql: query, args: args})
}

// send sends the queued statements in one round trip, each prepared first (once per
// connection), and returns the last one's command tag; when rows is set the last one
// returns rows and rows reads them.
func (p *Pipe) send(ctx context.Context, rows func(pgx.Rows) error) (tag pgconn.CommandTag, err error) {
	if p.ended {
		return pgconn.CommandTag{}, errPipeEnded
	}
	if p.failed != nil {
		return pgconn.CommandTag{}, fmt.Errorf("%w: %w", ErrPipeFailed, p.failed)
	}
	defer func() {
		if err != nil {
			p.failed = err
		}
	}()
	qs := p.queued
	p.queued = nil
	var b pgx.Batch
	names := make([]string, 0, len(qs))
	for _, q := range qs {
		name := q.sql
		if q.sql != sqlBegin && q.sql != sqlCommit { // transaction control has no plan to keep
			var err error
			if name, err = prepareBatched(ctx, p.conn, q.sql, p.simple); err != nil {
				return pgconn.CommandTag{}, wrap(q.what, err)
			}
			names = append(names, name)
		}
		b.Queue(name, q.args...)
	}
	p.begun = true
	br := p.conn.SendBatch(ctx, &b)
	tag, err = readBatch(br, qs, rows)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if !p.simple && StalePlan(err) {
		p.stale = names
	}
	return tag, err
}

// PrepareBatched prepares sql on c, once per connection, and returns the name a
// pgx.Batch queues it by (a batch runs a queued text that names a prepared statement
// as that statement). The name is not the text itself: pgx would then run the same
// statement for the connection's cached-statement mode (Stmts) too, and that mode
// prepares anew only the statements it cached itself when PostgreSQL refuses a plan
// a change of a table made stale. Under default_query_exec_mode=simple_protocol (for
// a pooler that keeps no prepared statements) it prepares nothing and returns sql: a
// batch then sends the text, its values written in by pgx.
func PrepareBatched(ctx context.Context, c *pgx.Conn, sql string) (string, error) {
	return prepareBatched(ctx, c, sql, c.Config().DefaultQueryExecMode == pgx.QueryExecModeSimpleProtocol)
}

// prepareBatched is PrepareBatched for a connection whose mode is known (simple: its
// queries go over the simple protocol); c.Config copies the whole configuration.
func prepareBatched(ctx context.Context, c *pgx.Conn, sql string, simple bool) (string, error) {
	if simple {
		return sql, nil
	}
	name, ok := batchedNames.Load(sql)
	if !ok {
		sum := sha256.Sum256([]byte(sql))
		name, _ = batchedNames.LoadOrStore(sql, "batched_"+hex.EncodeToString(sum[:16]))
	}
	if _, err := c.Prepare(ctx, name.(string), sql); err != nil {
		return "", err
	}
	return name.(string), nil
}

// batchedNames maps the texts PrepareBatched has named to their names; the texts are
// the program's fixed statements, so it stays small.
var batchedNames sync.Map

// readBatch reads the results of a batch of the statements qs: the last one's rows
// through rows when it is set.
func readBatch(br pgx.BatchResults, qs []queued, rows func(pgx.Rows) error) (pgconn.CommandTag, error) {
	last := qs[len(qs)-1]
	for _, q := range qs[:len(qs)-1] {
		if _, err := br.Exec(); err != nil {
			return pgconn.CommandTag{}, wrap(q.what, err)
		}
	}
	if rows == nil {
		tag, err := br.Exec()
		return tag, wrap(last.what, err)
	}
	rs, err := br.Query()
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer rs.Close()
	if err := rows(rs); err != nil {
		return pgconn.CommandTag{}, err
	}
	rs.Close()
	return rs.CommandTag(), rs.Err()
}

// wrap names the statement what in err, when it has a name.
func wrap(what string, err error) error {
	if err == nil || what == "" {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// abort ends a transaction that failed with err: it rolls back what was sent, or
// closes the connection when that fails, so the pool never hands out a connection
// inside a transaction. It returns err.
func (p *Pipe) abort(err error) error {
	if !p.begun || p.conn.IsClosed() {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	if p.conn.PgConn().TxStatus() != 'I' {
		if _, rerr := p.conn.Exec(ctx, "ROLLBACK"); rerr != nil {
			// A closed connection is one database/sql drops instead of pooling.
			_ = p.conn.Close(ctx)
			return err
		}
	}
	for _, name := range p.stale {
		_ = p.conn.Deallocate(ctx, name)
	}
	return err
}
