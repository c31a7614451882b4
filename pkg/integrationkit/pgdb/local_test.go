package pgdb_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

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

	require.Panics(t, func() { pgdb.NewLocal("enable_seqscan") }, "a name without a value")
}
