package e2e_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// SIGKILL finance while a clerk's request is between its change and its stored
// answer: the request has written the payment (or the invoice) and is held on a lock
// before the rest of its transaction; finance dies and its waiting statement ends as
// a crash would. The retry with the same Idempotency-Key then gets the 201, and there
// is exactly one payment and one invoice.paid (exactly one invoice), never a 409 for
// a change that happened nor a second change.
func TestCrashBetweenChangeAndAnswer(t *testing.T) {
	t.Parallel()
	for _, what := range []string{"payment", "invoice"} {
		t.Run(what, func(t *testing.T) {
			t.Parallel()
			env := harness.New(t, harness.Options{})
			var inv invoice
			url, body := env.Finance.URL+"/v1/invoices", any(map[string]any{"customer_id": "cust-crash", "currency": "EUR", "total_minor": 5000})
			if what == "payment" {
				inv = issue(t, env, "cust-crash")
				url, body = env.Finance.URL+"/v1/invoices/"+inv.ID+"/payments", map[string]any{"payment_id": "pay-crash", "amount_minor": inv.TotalMinor}
			}
			// Hold the outbox: the request writes its change, then waits to write its event.
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, env.FinanceDB)
			require.NoError(t, err)
			defer conn.Close(ctx)
			lock, err := conn.Begin(ctx)
			require.NoError(t, err)
			_, err = lock.Exec(ctx, `LOCK TABLE finance_outbox IN SHARE MODE`)
			require.NoError(t, err)

			answered := make(chan harness.Response, 1)
			go func() {
				r, _ := harness.Do(http.MethodPost, url, harness.ClerkToken, body, "Idempotency-Key", "crash-key")
				answered <- r
			}()
			var waiting int
			require.Eventually(t, func() bool {
				waiting = query[int](t, env.FinanceDB, `SELECT coalesce(min(pid), 0) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO%finance_outbox%'`)
				return waiting != 0
			}, 10*time.Second, 5*time.Millisecond, "the request waits between its change and its answer")
			env.Finance.Kill(t)
			_, err = conn.Exec(ctx, `SELECT pg_terminate_backend($1)`, waiting) // the dead client's statement ends
			require.NoError(t, err)
			require.NoError(t, lock.Rollback(ctx))
			<-answered // the connection broke: the clerk does not know what happened

			env.Finance.Start(t)
			retry := harness.Call(t, http.MethodPost, url, harness.ClerkToken, body, "Idempotency-Key", "crash-key")
			require.Equal(t, http.StatusCreated, retry.Status, string(retry.Body))
			again := harness.Call(t, http.MethodPost, url, harness.ClerkToken, body, "Idempotency-Key", "crash-key")
			require.Equal(t, retry.Body, again.Body)
			require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
			if what == "payment" {
				require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM payments WHERE invoice_id = $1`, inv.ID))
				require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE event_type = 'invoice.paid'`))
				return
			}
			require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM invoices`))
			require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox`))
		})
	}
}
