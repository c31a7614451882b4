package pgdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
)

// rollbackTimeout bounds the ROLLBACK of a failed pipe; a connection that does not
// answer by then is closed instead.
const rollbackTimeout = 5 * time.Second

// Transaction control goes unprepared: it has no plan to keep.
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
	// the row's columns into dest.
	Each(ctx context.Context, query string, args []any, row func(scan func(dest ...any) error) error) error
	// Queue runs a statement whose result is not read. Stmts runs it at once and
	// returns its error; a Pipe sends it with the next Exec, Each or the COMMIT,
	// whichever comes first, and that call returns its error, wrapped in what.
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
type Pipe struct {
	conn   *pgx.Conn
	queued pgx.Batch
	// whats names each queued statement for its error.
	whats []string
	// begun is set once the BEGIN has been sent.
	begun bool
	// refused are the prepared statements of a round trip PostgreSQL refused, made
	// anew by the next use (a plan made stale by a change of a table would be
	// refused again), as pgx's own statement cache does.
	refused []string
}

var _ Runner = (*Pipe)(nil)
var _ Runner = Stmts{}

// RunInPipe runs fn in a transaction on a connection of db's pool and commits it when
// fn returns nil; an error of fn rolls it back and is returned. Statements run
// through p (prepared once per connection, by their text), so fn must not use db
// meanwhile for work of the same transaction.
func RunInPipe(ctx context.Context, db *bun.DB, fn func(ctx context.Context, p *Pipe) error) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	return c.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("pgdb: a pipe needs a pgx connection, not %T", dc)
		}
		p := &Pipe{conn: sc.Conn()}
		p.queue("begin", sqlBegin)
		if err := fn(ctx, p); err != nil {
			return p.abort(err)
		}
		p.queue("commit", sqlCommit)
		if _, err := p.send(ctx, nil); err != nil {
			return p.abort(err)
		}
		return nil
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

// Queue holds query back until the next round trip; it returns nil.
func (p *Pipe) Queue(_ context.Context, what, query string, args ...any) error {
	p.queue(what, query, args...)
	return nil
}

func (p *Pipe) queue(what, query string, args ...any) {
	p.queued.Queue(query, args...)
	p.whats = append(p.whats, what)
}

// send sends the queued statements in one round trip, each prepared by its text, and
// returns the last one's command tag; when rows is set the last one returns rows and
// rows reads them.
func (p *Pipe) send(ctx context.Context, rows func(pgx.Rows) error) (pgconn.CommandTag, error) {
	b, whats := p.queued, p.whats
	p.queued, p.whats = pgx.Batch{}, nil
	var names []string
	for _, q := range b.QueuedQueries {
		if q.SQL == sqlBegin || q.SQL == sqlCommit {
			continue
		}
		if _, err := p.conn.Prepare(ctx, q.SQL, q.SQL); err != nil {
			return pgconn.CommandTag{}, err
		}
		names = append(names, q.SQL)
	}
	p.begun = true
	br := p.conn.SendBatch(ctx, &b)
	tag, err := readBatch(br, whats, rows)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		p.refused = names
	}
	return tag, err
}

// readBatch reads the results of a batch of len(whats) statements: the last one's
// rows through rows when it is set.
func readBatch(br pgx.BatchResults, whats []string, rows func(pgx.Rows) error) (pgconn.CommandTag, error) {
	last := len(whats) - 1
	for _, what := range whats[:last] {
		if _, err := br.Exec(); err != nil {
			return pgconn.CommandTag{}, wrap(what, err)
		}
	}
	if rows == nil {
		tag, err := br.Exec()
		return tag, wrap(whats[last], err)
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
	for _, name := range p.refused {
		_ = p.conn.Deallocate(ctx, name)
	}
	return err
}
