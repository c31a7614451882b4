package invoiceapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/pkg/integrationkit/idempotency"
)

// requireReplayed posts body to path twice under key and checks that the second answer
// replays the first: 201 both times, the same body, marked replayed. It returns both.
func (b *bundle) requireReplayed(t *testing.T, path, body, key string) (first, again *httptest.ResponseRecorder) {
	t.Helper()
	first = b.do(t, http.MethodPost, path, body, idempotency.HeaderKey, key)
	require.Equal(t, http.StatusCreated, first.Code, first.Body.String())
	again = b.do(t, http.MethodPost, path, body, idempotency.HeaderKey, key)
	require.Equal(t, http.StatusCreated, again.Code)
	require.Equal(t, first.Body.Bytes(), again.Body.Bytes())
	require.Equal(t, "true", again.Header().Get(idempotency.HeaderReplayed))
	return first, again
}

func TestIssueWithIdempotencyKeyReplays(t *testing.T) {
	t.Parallel()
	b := setup(t)

	first, again := b.requireReplayed(t, "/v1/invoices", palletInvoice, "issue-1")
	require.Equal(t, first.Header().Get("Location"), again.Header().Get("Location"))

	other := `{"customer_id":"cust-43","currency":"EUR","total_minor":1}`
	requireProblem(t, b.do(t, http.MethodPost, "/v1/invoices", other, idempotency.HeaderKey, "issue-1"),
		http.StatusUnprocessableEntity, "idempotency-key-reused")
	require.Equal(t, counts{Invoices: 1, Lines: 1, Outbox: 1}, b.counts(t))
}

func TestPaymentWithIdempotencyKeyReplaysInsteadOf409(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.issue(t, "cust-42", 12000)
	path := "/v1/invoices/" + inv.ID + "/payments"
	body := `{"payment_id":"pay-1","amount_minor":12000}`

	b.requireReplayed(t, path, body, "pay-key")
	require.Equal(t, 1, b.counts(t).Payments)
}

func TestPaymentWhileFirstIsInFlightIs409(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.issue(t, "cust-42", 12000)
	path := "/v1/invoices/" + inv.ID + "/payments"
	body := `{"payment_id":"pay-1","amount_minor":12000}`

	// Hold the invoice's row lock so the first payment stays in flight.
	ctx := context.Background()
	tx, err := b.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.NewRaw(`SELECT 1 FROM invoices WHERE id = ? FOR UPDATE`, inv.ID).Exec(ctx)
	require.NoError(t, err)

	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- b.do(t, http.MethodPost, path, body, idempotency.HeaderKey, "pay-key") }()
	require.Eventually(t, func() bool { // the first request holds its key: its transaction's advisory lock
		var n int
		err := b.db.NewRaw(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(ctx, &n)
		return err == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond)

	busy := b.do(t, http.MethodPost, path, body, idempotency.HeaderKey, "pay-key")
	requireProblem(t, busy, http.StatusConflict, "idempotency-key-in-flight")
	require.Equal(t, "1", busy.Header().Get("Retry-After"))

	require.NoError(t, tx.Rollback())
	first := <-done
	require.Equal(t, http.StatusCreated, first.Code, first.Body.String())
	replayed := b.do(t, http.MethodPost, path, body, idempotency.HeaderKey, "pay-key")
	require.Equal(t, first.Body.String(), replayed.Body.String())
	require.Equal(t, 1, b.counts(t).Payments)
}

func TestRefundWithIdempotencyKeyReplays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.issue(t, "cust-42", 100)
	require.Equal(t, http.StatusCreated, b.pay(t, inv.ID, "pay-1", 100).Code)
	path := "/v1/invoices/" + inv.ID + "/refunds"
	body := `{"refund_id":"ref-1","reason":"damaged"}`

	b.requireReplayed(t, path, body, "ref-key")

	// An answered error is stored too: the same key keeps answering the same way.
	conflict := b.do(t, http.MethodPost, path, `{"refund_id":"ref-2"}`, idempotency.HeaderKey, "ref-key-2")
	requireProblem(t, conflict, http.StatusConflict, "invoice-already-refunded")
	replayed := b.do(t, http.MethodPost, path, `{"refund_id":"ref-2"}`, idempotency.HeaderKey, "ref-key-2")
	require.Equal(t, conflict.Body.Bytes(), replayed.Body.Bytes())
	require.Equal(t, "true", replayed.Header().Get(idempotency.HeaderReplayed))
}
