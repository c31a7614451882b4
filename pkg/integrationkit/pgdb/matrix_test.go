package pgdb_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

// withSetting is the database URL raw with the connection setting key=value added.
func withSetting(t *testing.T, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// A transaction a buggy handler leaves open is ended by PostgreSQL: Open sets
// idle_in_transaction_session_timeout on every connection (IdleInTransactionTimeout),
// unless the URL names its own value, as this test does with 300 ms. The session goes
// with its locks, the work is never committed, and the pool carries on.
func TestIdleTransactionIsEndedByTheServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewURL(t, "kitprepared", notesSchema)
	db, err := pgdb.Open(ctx, dbURL, 2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	var setting string
	require.NoError(t, db.NewRaw(`SHOW idle_in_transaction_session_timeout`).Scan(ctx, &setting))
	require.Equal(t, "1min", setting, "the default of every pool")
	require.Equal(t, time.Minute, pgdb.IdleInTransactionTimeout)

	short, err := pgdb.Open(ctx, withSetting(t, dbURL, "idle_in_transaction_session_timeout", "300"), 1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = short.Close() })
	require.NoError(t, short.NewRaw(`SHOW idle_in_transaction_session_timeout`).Scan(ctx, &setting))
	require.Equal(t, "300ms", setting, "the URL's own value wins")

	tx, err := short.BeginTx(ctx, nil)
	require.NoError(t, err)
	var pid int
	require.NoError(t, tx.NewRaw(`SELECT pg_backend_pid()`).Scan(ctx, &pid))
	_, err = tx.ExecContext(ctx, `INSERT INTO notes (id, body) VALUES (1, 'left behind')`)
	require.NoError(t, err)
	// The handler forgets tx here, holding the row lock of id 1.
	require.Eventually(t, func() bool {
		var n int
		err := db.NewRaw(`SELECT count(*) FROM pg_stat_activity WHERE pid = ?`, pid).Scan(ctx, &n)
		return err == nil && n == 0
	}, 10*time.Second, 20*time.Millisecond, "the idle session was ended")
	require.Error(t, tx.Commit(), "the forgotten work is never committed")

	_, err = db.ExecContext(ctx, `INSERT INTO notes (id, body) VALUES (1, 'next writer')`)
	require.NoError(t, err, "the lock went with the session")
	var n int
	require.NoError(t, short.NewRaw(`SELECT count(*) FROM notes`).Scan(ctx, &n))
	require.Equal(t, 1, n, "the pool replaced the ended connection")
}
