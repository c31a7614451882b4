// Package pgdb opens bun databases on the pgx driver, applies embedded golang-migrate
// migrations and classifies PostgreSQL errors.
package pgdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// Open connects to the PostgreSQL database at url and checks that it answers.
// maxConns bounds the pool (0 keeps database/sql's default of unlimited). Every
// connection the pool opens waits for a free slot when the server has none
// (WaitForSlot), and each attempt gives up after the URL's connect_timeout, 10 s
// when it sets none.
//
// Statements go out in pgx's exec mode (one round trip, unnamed statement) unless the
// URL names a default_query_exec_mode: bun writes every value into the SQL text, so
// pgx's default statement cache would prepare, and later deallocate, a named
// statement for almost every query — two round trips and about twice the CPU on
// both sides, for plans that are never reused. Fixed statements that run per event go
// through Prepared instead.
//
// Every connection ends a transaction left idle for IdleInTransactionTimeout (unless
// the URL names idle_in_transaction_session_timeout itself): a handler that forgets to
// commit must not hold its locks and the vacuum horizon for good. The setting is made
// with SET on connect, not as a startup parameter, which poolers may refuse.
func Open(ctx context.Context, url string, maxConns int) (*bun.DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if !strings.Contains(url, "default_query_exec_mode") {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	var opts []stdlib.OptionOpenDB
	if !strings.Contains(url, "idle_in_transaction_session_timeout") {
		opts = append(opts, stdlib.OptionAfterConnect(setIdleInTransactionTimeout))
	}
	sqldb := sql.OpenDB(newConnector(cfg, opts...))
	if maxConns > 0 {
		sqldb.SetMaxOpenConns(maxConns)
		sqldb.SetMaxIdleConns(maxConns)
	}
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	db := bun.NewDB(sqldb, pgdialect.New())
	pingCtx, cancel := context.WithTimeout(ctx, SlotWait+cfg.ConnectTimeout)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		return nil, errors.Join(fmt.Errorf("ping database: %w", err), db.Close())
	}
	return db, nil
}

// IdleInTransactionTimeout is how long Open's connections let a transaction sit idle
// before PostgreSQL ends the session.
const IdleInTransactionTimeout = time.Minute

func setIdleInTransactionTimeout(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, "SET idle_in_transaction_session_timeout = "+
		strconv.FormatInt(IdleInTransactionTimeout.Milliseconds(), 10))
	if err != nil {
		return fmt.Errorf("set idle_in_transaction_session_timeout: %w", err)
	}
	return nil
}

// defaultConnectTimeout bounds an attempt to connect when the URL sets no
// connect_timeout: a server that does not answer fails the attempt instead of
// hanging it for as long as the kernel keeps trying.
const defaultConnectTimeout = 10 * time.Second

// newConnector connects with cfg, waiting for a slot and bounding every attempt.
func newConnector(cfg *pgx.ConnConfig, opts ...stdlib.OptionOpenDB) driver.Connector {
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	return slotConnector{stdlib.GetConnector(*cfg, opts...)}
}

// PostgreSQL SQLSTATE codes the kit and the services act on.
const (
	CodeUniqueViolation      = "23505"
	CodeSerializationFailure = "40001"
	CodeDeadlockDetected     = "40P01"
	CodeTooManyConnections   = "53300"
	CodeObjectInUse          = "55006"
)

// SQLSTATE codes of a prepared statement PostgreSQL no longer accepts: its plan's
// result type went stale (0A000, "cached plan must not change result type"), or the
// statement is gone (26000).
const (
	codeFeatureNotSupported  = "0A000"
	codeInvalidStatementName = "26000"
)

// StalePlan says PostgreSQL refused a prepared statement it no longer accepts (a change
// of a table made its plan's result type stale, or the statement is gone): the
// statement is to be deallocated, so that its next use prepares it anew, as pgx's own
// statement cache does. Any other error leaves the statement as good as it was.
func StalePlan(err error) bool {
	code := Code(err)
	return code == codeFeatureNotSupported || code == codeInvalidStatementName
}

// Code returns the SQLSTATE of a PostgreSQL error anywhere in err's chain, or "".
func Code(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// IsUniqueViolation reports whether err is a PostgreSQL unique_violation.
func IsUniqueViolation(err error) bool { return Code(err) == CodeUniqueViolation }

// ConstraintName returns the name of the constraint a PostgreSQL error names, or "".
func ConstraintName(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName
	}
	return ""
}
