package e2e_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
)

// Issue and pay 20 invoices one by one: each becomes a shipment in `waiting`, and with
// the cron at 5 s the median pay→waiting time (the two commits' timestamps) is well
// under 500 ms, which only the NOTIFY path can give.
func TestPaidInvoicesBecomeWaitingShipments(t *testing.T) {
	t.Parallel()
	env := harness.New(t, harness.Options{FinanceEnv: map[string]string{"DISPATCH_INTERVAL": "5s"}})
	var latencies []time.Duration
	for i := range 20 {
		latencies = append(latencies, payToWaiting(t, env, fmt.Sprintf("cust-%d", i)))
	}
	slices.Sort(latencies)
	median := latencies[len(latencies)/2]
	t.Logf("pay→waiting median %s, max %s", median, latencies[len(latencies)-1])
	require.Less(t, median, 500*time.Millisecond)
	require.Equal(t, 20, query[int](t, env.LogisticsDB, `SELECT count(*) FROM shipments WHERE state = 'waiting'`))
	require.Equal(t, 40, query[int](t, env.LogisticsDB, `SELECT count(*) FROM logistics_processed_events`))
	require.Equal(t, 0, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE delivery_status <> 'delivered'`))
}

// 24 concurrent full payments of one invoice with different payment ids: one 201,
// 23 × 409, one invoice.paid outbox row.
func TestConcurrentPaymentsPayOnce(t *testing.T) {
	t.Parallel()
	env := harness.New(t, harness.Options{})
	inv := issue(t, env, "cust-race")
	statuses := make([]int, 24)
	concurrently(t, 24, func(i int) error {
		r, err := harness.Do(http.MethodPost, env.Finance.URL+"/v1/invoices/"+inv.ID+"/payments", harness.ClerkToken,
			map[string]any{"payment_id": fmt.Sprintf("pay-%d", i), "amount_minor": inv.TotalMinor})
		statuses[i] = r.Status
		return err
	})
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	require.Equal(t, map[int]int{http.StatusCreated: 1, http.StatusConflict: 23}, counts)
	require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox WHERE event_type = 'invoice.paid'`))
	require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM payments WHERE invoice_id = $1`, inv.ID))
}

// The Idempotency-Key of the clerk API: a replay is byte-for-byte with
// Idempotent-Replayed, a different body under the same key is 422.
func TestIdempotencyKeyReplay(t *testing.T) {
	t.Parallel()
	env := harness.New(t, harness.Options{})
	body := map[string]any{"customer_id": "cust-idem", "currency": "EUR", "total_minor": 5000}
	first := harness.Call(t, http.MethodPost, env.Finance.URL+"/v1/invoices", harness.ClerkToken, body, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusCreated, first.Status, string(first.Body))
	again := harness.Call(t, http.MethodPost, env.Finance.URL+"/v1/invoices", harness.ClerkToken, body, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusCreated, again.Status)
	require.Equal(t, first.Body, again.Body, "byte-for-byte")
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	body["total_minor"] = 6000
	other := harness.Call(t, http.MethodPost, env.Finance.URL+"/v1/invoices", harness.ClerkToken, body, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusUnprocessableEntity, other.Status, string(other.Body))
	require.Equal(t, "application/problem+json", other.Header.Get("Content-Type"))
	require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM invoices`))
}

// A paid invoice cannot be paid again; nothing is written.
func TestPayingAPaidInvoiceIsAConflict(t *testing.T) {
	t.Parallel()
	env := harness.New(t, harness.Options{})
	inv := issue(t, env, "cust-twice")
	require.Equal(t, http.StatusCreated, pay(t, env, inv, "pay-a").Status)
	r := pay(t, env, inv, "pay-b")
	require.Equal(t, http.StatusConflict, r.Status, string(r.Body))
	require.Equal(t, 1, query[int](t, env.FinanceDB, `SELECT count(*) FROM payments`))
	require.Equal(t, 2, query[int](t, env.FinanceDB, `SELECT count(*) FROM finance_outbox`))
}
