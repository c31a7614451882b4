package pgdb_test

import (
	"context"
	"crypto/rand"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/pgtest"
)

// oneSlot returns the URL of a fresh database as a new role allowed one connection,
// so that a second connection is refused with too_many_connections as it would be on
// a full server.
func oneSlot(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	admin, err := pgtest.Connect(ctx, pgtest.AdminURL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(ctx) })
	role := "t_slot_" + rand.Text()[:10]
	_, err = admin.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN CONNECTION LIMIT 1")
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.Exec(ctx, "DROP ROLE "+pgx.Identifier{role}.Sanitize())
		require.NoError(t, err)
	})
	u, err := url.Parse(pgtest.NewURL(t, "kitprepared", notesSchema))
	require.NoError(t, err)
	u.User = url.User(role)
	return u.String()
}

// refusals connects to url, sending every error on the returned channel.
func refusals(url string) (func(context.Context) (*pgx.Conn, error), <-chan error) {
	errs := make(chan error, 100)
	return func(ctx context.Context) (*pgx.Conn, error) {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			errs <- err
		}
		return conn, err
	}, errs
}

func TestWaitForSlotConnectsOnceASlotFrees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := oneSlot(t)
	held, err := pgx.Connect(ctx, u)
	require.NoError(t, err)

	connect, errs := refusals(u)
	done := make(chan error, 1)
	go func() {
		conn, err := pgdb.WaitForSlot(ctx, connect)
		if err == nil {
			err = conn.Close(ctx)
		}
		done <- err
	}()
	require.Equal(t, pgdb.CodeTooManyConnections, pgdb.Code(<-errs), "refused while the slot is held")
	require.NoError(t, held.Close(ctx))
	require.NoError(t, <-done)
}

func TestWaitForSlotStopsWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	u := oneSlot(t)
	held, err := pgx.Connect(context.Background(), u)
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Close(context.Background()) })

	ctx, cancel := context.WithCancel(context.Background())
	attempts := 0
	_, err = pgdb.WaitForSlot(ctx, func(ctx context.Context) (*pgx.Conn, error) {
		attempts++
		defer cancel() // the caller gives up after the first refusal
		return pgx.Connect(ctx, u)
	})
	require.Equal(t, pgdb.CodeTooManyConnections, pgdb.Code(err))
	require.Equal(t, 1, attempts)
}

func TestWaitForSlotReturnsOtherErrorsAtOnce(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(pgtest.AdminURL())
	require.NoError(t, err)
	u.Path = "/t_missing_" + rand.Text()[:10]
	connect, errs := refusals(u.String())
	_, err = pgdb.WaitForSlot(context.Background(), connect)
	require.Equal(t, "3D000", pgdb.Code(err), "invalid_catalog_name")
	require.Len(t, errs, 1, "one attempt")
}
