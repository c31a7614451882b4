package pgdb_test

import (
	"context"
	"database/sql"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

var notesSchema = fstest.MapFS{
	"000001_notes.up.sql":   {Data: []byte(`CREATE TABLE notes (id int PRIMARY KEY, body text NOT NULL);`)},
	"000001_notes.down.sql": {Data: []byte(`DROP TABLE notes;`)},
}

func TestPreparedStatementsJoinTheTransactionAndAreCached(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := pgtest.NewDB(t, "kitprepared", notesSchema)
	const insert = `INSERT INTO notes (id, body) VALUES ($1, $2)`

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	stmts := pgdb.Prepared(tx)
	_, err = stmts.Exec(ctx, insert, 1, "kept only if committed")
	require.NoError(t, err)
	var prepared int
	require.NoError(t, stmts.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement = $1`,
		[]any{insert}, &prepared))
	require.Equal(t, 1, prepared, "the statement is prepared on the transaction's connection")
	require.NoError(t, tx.Rollback())

	var n int
	require.NoError(t, pgdb.Prepared(db).QueryRow(ctx, `SELECT count(*) FROM notes`, nil, &n))
	require.Zero(t, n, "the insert was part of the rolled-back transaction")

	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := pgdb.Prepared(tx).Exec(ctx, insert, 2, "committed")
		return err
	})
	require.NoError(t, err)
	rows, err := pgdb.Prepared(db).Query(ctx, `SELECT id, body FROM notes WHERE id >= $1`, 0)
	require.NoError(t, err)
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id int
		var body string
		require.NoError(t, rows.Scan(&id, &body))
		got = append(got, body)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"committed"}, got)

	var body string
	err = pgdb.Prepared(db).QueryRow(ctx, `SELECT body FROM notes WHERE id = $1`, []any{99}, &body)
	require.ErrorIs(t, err, sql.ErrNoRows)
}

// wrapped is a bun.IDB that is not one of bun's own handles.
type wrapped struct{ *bun.DB }

func TestPreparedRefusesAnUnknownHandle(t *testing.T) {
	t.Parallel()
	stmts := pgdb.Prepared(wrapped{})
	_, err := stmts.Exec(context.Background(), `SELECT 1`)
	require.ErrorContains(t, err, "pgdb_test.wrapped")
	_, err = stmts.Query(context.Background(), `SELECT 1`)
	require.Error(t, err)
	var one int
	require.Error(t, stmts.QueryRow(context.Background(), `SELECT 1`, nil, &one))
}

// A Local's settings hold for its statement and end with it: on the database, on a
// connection of it, and in a caller's transaction, where what the caller had set
// before comes back.
func TestLocalSettingsHoldForTheirStatementAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := pgtest.NewDB(t, "kitlocal", notesSchema)
	db.SetMaxOpenConns(1) // every handle below is the one backend
	local := pgdb.NewLocal("enable_seqscan", "off", "work_mem", "1234kB")
	const show = `SELECT current_setting('enable_seqscan') || ' ' || current_setting('work_mem') || ' ' || $1::text`

	// during runs show through local on h and returns what the statement saw.
	during := func(h bun.IDB) string {
		t.Helper()
		var saw []string
		require.NoError(t, local.Query(ctx, h, show, []any{"x"}, func(rows pgdb.Rows) error {
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					return err
				}
				saw = append(saw, s)
			}
			return nil
		}))
		return saw[0]
	}
	after := func(h bun.IDB) string {
		t.Helper()
		var s string
		require.NoError(t, h.QueryRowContext(ctx, `SELECT current_setting('enable_seqscan') || ' ' || current_setting('work_mem')`).Scan(&s))
		return s
	}
	defaults := after(db)

	require.Equal(t, "off 1234kB x", during(db))
	require.Equal(t, defaults, after(db), "on the database")

	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	require.Equal(t, "off 1234kB x", during(conn))
	require.Equal(t, defaults, after(conn), "on a connection")
	require.NoError(t, conn.Close())

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `SET LOCAL work_mem = '2345kB'`)
	require.NoError(t, err)
	require.Equal(t, "off 1234kB x", during(tx))
	require.Equal(t, "on 2345kB", after(tx), "in a transaction, the caller's own setting comes back")
	require.NoError(t, tx.Rollback())
	require.Equal(t, defaults, after(db))
}
