package pgdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
)

// Local is a few settings (planner settings, plan_cache_mode) that hold for one
// statement alone: Query sends them and the statement in one round trip, a pipeline
// PostgreSQL runs as one implicit transaction, so the settings end with it and no
// transaction ever waits on the client. It is how a per-event statement gets the plan
// it needs whatever the statistics say (outbox's claim and settlement).
type Local struct {
	names []string
	pairs []any  // set's parameters: a name, its value, …
	set   string // SELECT set_config($1, $2, true), … of every setting
	save  string // SELECT current_setting($1), … of every setting
}

// NewLocal returns the settings of pairs: a name, its value, a name, its value, ….
// They are the program's constants, so an odd count is a programming error and
// panics.
func NewLocal(pairs ...string) Local {
	if len(pairs) == 0 || len(pairs)%2 != 0 {
		panic(fmt.Sprintf("pgdb: NewLocal needs name, value pairs, not %d strings", len(pairs)))
	}
	var l Local
	var set, save []string
	for i := 0; i < len(pairs); i += 2 {
		l.names, l.pairs = append(l.names, pairs[i]), append(l.pairs, pairs[i], pairs[i+1])
		set = append(set, fmt.Sprintf("set_config($%d, $%d, true)", i+1, i+2))
		save = append(save, fmt.Sprintf("current_setting($%d)", i/2+1))
	}
	l.set, l.save = "SELECT "+strings.Join(set, ", "), "SELECT "+strings.Join(save, ", ")
	return l
}

// Rows is what Query's reader is given: a statement's rows, read until Next is false.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Query runs query with the settings in force for it alone and passes its rows to
// read. On a *bun.DB or a bun.Conn the statement is prepared once per connection (not
// under the simple protocol, where nothing is prepared) and goes beside the settings in
// one round trip; a statement PostgreSQL no longer accepts
// (StalePlan) is prepared anew by the next call, and one that failed before it reached
// the server (a connection the server had closed) is tried once more on another
// connection, as database/sql would. In a caller's transaction the settings are set
// before the statement and set back after it.
func (l Local) Query(ctx context.Context, db bun.IDB, query string, args []any, read func(Rows) error) error {
	switch h := db.(type) {
	case *bun.DB:
		err := l.onDB(ctx, h, query, args, read)
		if err != nil && pgconn.SafeToRetry(err) {
			err = l.onDB(ctx, h, query, args, read)
		}
		return err
	case bun.Conn:
		return l.onConn(ctx, h.Conn, query, args, read)
	case *bun.Conn:
		return l.onConn(ctx, h.Conn, query, args, read)
	default:
		return l.inTx(ctx, db, query, args, read)
	}
}

// onDB is Query on a connection of db's pool.
func (l Local) onDB(ctx context.Context, db *bun.DB, query string, args []any, read func(Rows) error) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	return l.onConn(ctx, c.Conn, query, args, read)
}

// onConn sends the settings and query in one batch on conn.
func (l Local) onConn(ctx context.Context, conn *sql.Conn, query string, args []any, read func(Rows) error) error {
	return WithPgx(conn, func(pc *pgx.Conn) error {
		name, err := PrepareBatched(ctx, pc, query)
		if err != nil {
			return err
		}
		var b pgx.Batch
		b.Queue(l.set, l.pairs...)
		b.Queue(name, args...)
		br := pc.SendBatch(ctx, &b)
		// The settings' result, then the statement's rows.
		_, err = readBatch(br, make([]queued, 2), func(rows pgx.Rows) error { return read(rows) })
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if StalePlan(err) && !pc.IsClosed() {
			// A statement the server refused (a plan made stale by a change of the
			// table) is prepared anew by the next call, as pgx's own cache would.
			_ = pc.Deallocate(ctx, name)
		}
		return err
	})
}

// inTx is Query in the caller's transaction db: it reads the settings, sets them, runs
// query and sets them back.
func (l Local) inTx(ctx context.Context, db bun.IDB, query string, args []any, read func(Rows) error) error {
	was := make([]string, len(l.names))
	dest := make([]any, len(was))
	for i := range was {
		dest[i] = &was[i]
	}
	if err := Prepared(db).QueryRow(ctx, l.save, toAny(l.names), dest...); err != nil {
		return err
	}
	if _, err := Prepared(db).Exec(ctx, l.set, l.pairs...); err != nil {
		return err
	}
	err := queryRows(ctx, db, query, args, read)
	restore := make([]any, 0, 2*len(was))
	for i, name := range l.names {
		restore = append(restore, name, was[i])
	}
	// Set back even when ctx ended after the statement: the transaction may go on.
	if _, rerr := Prepared(db).Exec(context.WithoutCancel(ctx), l.set, restore...); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return err
}

// queryRows runs query in db and passes its rows to read.
func queryRows(ctx context.Context, db bun.IDB, query string, args []any, read func(Rows) error) error {
	rows, err := Prepared(db).Query(ctx, query, args...)
	if err != nil {
		return err
	}
	err = read(rows)
	if err == nil {
		err = rows.Err()
	}
	return errors.Join(err, rows.Close())
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
