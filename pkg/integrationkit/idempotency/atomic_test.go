package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"handoff/pkg/integrationkit/idempotency"
	"handoff/pkg/integrationkit/pgdb"
	"handoff/pkg/integrationkit/problem"
)

// insertThing is a handler's change: one row of things, in the request's transaction.
func insertThing(c echo.Context, db bun.IDB, n int32) error {
	return pgdb.RunInTx(c.Request().Context(), db, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewRaw(`INSERT INTO things (id, call) VALUES (?, ?)`, c.Param("id"), n).Exec(ctx)
		return err
	})
}

// terminateKeyHolder ends the backend holding a key's advisory lock, as the death of
// its process would, and waits until it is gone.
func (b *bundle) terminateKeyHolder(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var pid int
	require.NoError(t, b.db.NewRaw(`SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(ctx, &pid))
	_, err := b.db.ExecContext(ctx, `SELECT pg_terminate_backend(?)`, pid)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.db.NewRaw(`SELECT count(*) FROM pg_stat_activity WHERE pid = ?`, pid).Scan(ctx, &n))
		return n == 0
	}, 10*time.Second, 10*time.Millisecond)
}

// The change and its stored answer commit together: a success stores both; a 4xx
// after a change rolls the change back and stores the 4xx.
func TestChangeAndAnswerCommitTogether(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{})
	b.handle = func(c echo.Context, n int32) error {
		if err := insertThing(c, b.db, n); err != nil {
			return err
		}
		if c.Param("id") == "refused" {
			return problem.New(http.StatusConflict, "thing-refused", "changed my mind")
		}
		return created(c, n)
	}
	require.Equal(t, http.StatusCreated, b.post(t, "/things/1", "k-1", `{}`).Code)
	require.Equal(t, 1, b.count(t, "things"))
	requireProblem(t, b.post(t, "/things/refused", "k-2", `{}`), http.StatusConflict, "thing-refused")
	require.Equal(t, 1, b.count(t, "things"), "the refused request's change rolled back")
	require.Equal(t, 2, b.count(t, "idempotency_keys"))
	replayed := b.post(t, "/things/refused", "k-2", `{}`)
	require.Equal(t, "true", replayed.Header().Get(idempotency.HeaderReplayed))
	require.EqualValues(t, 2, b.calls.Load())
}

// A request whose process dies after its change and before the commit leaves neither
// the change nor its key: the retry with the same key runs at once, not after an
// abandonment window, and the change happens once.
func TestKeyOfADeadRequestIsFreeAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{AbandonAfter: time.Hour})
	entered, release := make(chan struct{}), make(chan struct{})
	b.handle = func(c echo.Context, n int32) error {
		if err := insertThing(c, b.db, n); err != nil {
			return err
		}
		if n == 1 {
			close(entered)
			<-release
		}
		return created(c, n)
	}
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- b.post(t, "/things/1", "k-1", `{}`) }()
	<-entered
	requireProblem(t, b.post(t, "/things/1", "k-1", `{}`), http.StatusConflict, "idempotency-key-in-flight")
	b.terminateKeyHolder(t)

	retried := b.post(t, "/things/1", "k-1", `{}`)
	require.Equal(t, http.StatusCreated, retried.Code, retried.Body.String())
	require.Contains(t, retried.Body.String(), `"call":2`)
	close(release)
	dead := <-done
	require.GreaterOrEqual(t, dead.Code, http.StatusInternalServerError, "the dead request's answer is an error")
	require.Equal(t, 1, b.count(t, "things"), "one change")
	replayed := b.post(t, "/things/1", "k-1", `{}`)
	require.Equal(t, retried.Body.String(), replayed.Body.String())
}

// A handler that outlives AbandonAfter rolls back: its change, its key and its answer
// go, and the retry runs.
func TestRequestOutlivingItsKeyRollsBack(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{AbandonAfter: 300 * time.Millisecond})
	b.handle = func(c echo.Context, n int32) error {
		if err := insertThing(c, b.db, n); err != nil {
			return err
		}
		if n == 1 {
			<-c.Request().Context().Done()
		}
		return created(c, n)
	}
	late := b.post(t, "/things/1", "k-1", `{}`)
	require.GreaterOrEqual(t, late.Code, http.StatusInternalServerError, late.Body.String())
	require.Zero(t, b.count(t, "things"))
	require.Zero(t, b.count(t, "idempotency_keys"))
	require.Equal(t, http.StatusCreated, b.post(t, "/things/1", "k-1", `{}`).Code)
	require.Equal(t, 1, b.count(t, "things"))
}

// The request hash is over canonical JSON: the same body re-serialised (members
// reordered, other whitespace) is a replay, not a different request.
func TestReserialisedBodyIsAReplay(t *testing.T) {
	t.Parallel()
	b := setup(t, idempotency.Config{})
	first := b.post(t, "/things/1", "k-1", `{"amount_minor":12000,"payment_id":"pay-1","meta":{"b":[1,2],"a":"x"}}`)
	require.Equal(t, http.StatusCreated, first.Code)
	again := b.post(t, "/things/1", "k-1", "{\n  \"payment_id\": \"pay-1\",\n  \"meta\": {\"a\": \"x\", \"b\": [1, 2]},\n  \"amount_minor\": 12000\n}")
	require.Equal(t, http.StatusCreated, again.Code)
	require.Equal(t, "true", again.Header().Get(idempotency.HeaderReplayed))
	requireProblem(t, b.post(t, "/things/1", "k-1", `{"amount_minor":12001,"payment_id":"pay-1","meta":{"b":[1,2],"a":"x"}}`),
		http.StatusUnprocessableEntity, "idempotency-key-reused")
	requireProblem(t, b.post(t, "/things/1", "k-1", `{"amount_minor":12000,"payment_id":"pay-1","meta":{"b":[2,1],"a":"x"}}`),
		http.StatusUnprocessableEntity, "idempotency-key-reused")
	require.EqualValues(t, 1, b.calls.Load())
}
