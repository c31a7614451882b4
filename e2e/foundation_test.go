package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"handoff/e2e/harness"
	"handoff/pkg/integrationkit/pgtest"
)

type invoice struct {
	ID         string `json:"id"`
	Number     string `json:"number"`
	Status     string `json:"status"`
	TotalMinor int64  `json:"total_minor"`
	PaidMinor  int64  `json:"paid_minor"`
}

type shipment struct {
	ID        string `json:"id"`
	InvoiceID string `json:"invoice_id"`
	State     string `json:"state"`
	Version   int64  `json:"version"`
}

func issue(t *testing.T, env *harness.Env, customer string) invoice {
	t.Helper()
	r := harness.Call(t, http.MethodPost, env.Finance.URL+"/v1/invoices", harness.ClerkToken, map[string]any{
		"customer_id": customer, "currency": "EUR",
		"lines": []map[string]any{{"description": "Pallet", "quantity": 2, "unit_price_minor": 6000}},
	})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	var inv invoice
	r.JSON(t, &inv)
	require.Equal(t, "issued", inv.Status)
	require.EqualValues(t, 12000, inv.TotalMinor)
	return inv
}

func pay(t *testing.T, env *harness.Env, inv invoice, paymentID string) harness.Response {
	t.Helper()
	return harness.Call(t, http.MethodPost, env.Finance.URL+"/v1/invoices/"+inv.ID+"/payments", harness.ClerkToken,
		map[string]any{"payment_id": paymentID, "amount_minor": inv.TotalMinor})
}

func shipmentOf(t *testing.T, env *harness.Env, invoiceID string) (shipment, bool) {
	t.Helper()
	r := harness.Call(t, http.MethodGet, env.Logistics.URL+"/v1/shipments?invoice_id="+invoiceID, harness.WarehouseToken, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var page struct {
		Items []shipment `json:"items"`
	}
	r.JSON(t, &page)
	if len(page.Items) == 0 {
		return shipment{}, false
	}
	require.Len(t, page.Items, 1, "one shipment per invoice")
	return page.Items[0], true
}

func query[T any](t *testing.T, url, sql string, args ...any) T {
	t.Helper()
	ctx := context.Background()
	conn, err := pgtest.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var v T
	require.NoError(t, conn.QueryRow(ctx, sql, args...).Scan(&v))
	return v
}

// Issue and pay 20 invoices one by one: each becomes a shipment in `waiting`, and with
// the cron at 5 s the median pay→waiting time (the two commits' timestamps) is well
// under 500 ms, which only the NOTIFY path can give.
func TestPaidInvoicesBecomeWaitingShipments(t *testing.T) {
	t.Parallel()
	env := harness.New(t, harness.Options{FinanceEnv: map[string]string{"DISPATCH_INTERVAL": "5s"}})
	var latencies []time.Duration
	for i := range 20 {
		inv := issue(t, env, fmt.Sprintf("cust-%d", i))
		r := pay(t, env, inv, "pay-"+inv.ID)
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		require.Eventually(t, func() bool {
			s, ok := shipmentOf(t, env, inv.ID)
			return ok && s.State == "waiting"
		}, 10*time.Second, 5*time.Millisecond)
		paidAt := query[time.Time](t, env.FinanceDB, `SELECT created_at FROM payments WHERE invoice_id = $1`, inv.ID)
		waitingAt := query[time.Time](t, env.LogisticsDB, `SELECT h.at FROM shipment_history h
			JOIN shipments s ON s.id = h.shipment_id WHERE s.invoice_id = $1 AND h.to_state = 'waiting'`, inv.ID)
		latencies = append(latencies, waitingAt.Sub(paidAt))
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
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 24)
	for i := range 24 {
		wg.Go(func() {
			<-start
			r, err := harness.Do(http.MethodPost, env.Finance.URL+"/v1/invoices/"+inv.ID+"/payments", harness.ClerkToken,
				map[string]any{"payment_id": fmt.Sprintf("pay-%d", i), "amount_minor": inv.TotalMinor})
			if err != nil {
				errs <- err
				return
			}
			statuses[i] = r.Status
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
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

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
