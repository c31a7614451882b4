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
