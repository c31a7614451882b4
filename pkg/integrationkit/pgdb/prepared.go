package pgdb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
)

// Stmts runs parameterised SQL ($1, $2, …) on the database/sql handle beneath a bun
// handle, in pgx's statement-cache mode: each distinct statement is prepared once per
// connection and its plan reused. bun writes every value into the SQL text, so its
// queries are parsed and planned on every call; the per-event statements (the
// producer transactions, the settlement, the consumer's batch) go through Stmts
// instead (the claim and the settlement are prepared likewise, beside their settings
// in one pgx batch: Local), and the rest stays with bun. A statement's text must therefore be
// fixed: values are always parameters, never formatted in.
type Stmts struct {
	q   querier
	err error
}

type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Prepared returns the Stmts of db: a *bun.DB, a bun.Conn or a bun.Tx (whose
// statements join the transaction). Any other handle makes every call fail.
func Prepared(db bun.IDB) Stmts {
	switch h := db.(type) {
	case *bun.DB:
		return Stmts{q: h.DB}
	case bun.Tx:
		return Stmts{q: h.Tx}
	case *bun.Tx:
		return Stmts{q: h.Tx}
	case bun.Conn:
		return Stmts{q: h.Conn}
	case *bun.Conn:
		return Stmts{q: h.Conn}
	}
	return Stmts{err: fmt.Errorf("pgdb: prepared statements need a bun DB, Conn or Tx, not %T", db)}
}

// cached makes pgx prepare and cache the statement (pgx reads a leading
// QueryExecMode argument as an option, not a parameter).
func cached(args []any) []any {
	return append([]any{pgx.QueryExecModeCacheStatement}, args...)
}

// Exec runs a statement that returns no rows.
func (s Stmts) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.q.ExecContext(ctx, query, cached(args)...)
}

// Query runs a statement that returns rows; the caller closes them.
func (s Stmts) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.q.QueryContext(ctx, query, cached(args)...)
}

// QueryRow runs a statement that returns at most one row and scans it into dest;
// no row is sql.ErrNoRows.
func (s Stmts) QueryRow(ctx context.Context, query string, args []any, dest ...any) error {
	if s.err != nil {
		return s.err
	}
	return s.q.QueryRowContext(ctx, query, cached(args)...).Scan(dest...)
}
